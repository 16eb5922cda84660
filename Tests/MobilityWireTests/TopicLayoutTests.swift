import MobilityWire
import Testing

@Suite struct TopicLayoutTests {
    @Test func parsesInboundTopicsAndRefusesInvalidUsers() {
        let l = TopicLayout(root: "mobility/v1")
        #expect(l.parse("mobility/v1/users/jamie-01/samples") == .inbound(user: "jamie-01", kind: .samples))
        #expect(l.parse("mobility/v1/users/bad user/samples") == .invalidUser("bad user"))
        #expect(l.parse("mobility/v1/users/jamie/alerts/x") == .other)
        #expect(l.parse("mobility/v1/users/jämie/events") == .invalidUser("jämie"))
        #expect(l.parse("mobility/v1/users//profile") == .invalidUser(""))
        #expect(l.parse("mobility/v1/users/a/b/deletions") == .invalidUser("a/b"))
        #expect(l.parse("mobility/v1/users/samples") == .other)
        #expect(l.parse("mobility/v1/users/jamie/samples/") == .other)
        #expect(l.parse("mobility/v2/users/jamie/samples") == .other)
        #expect(TopicLayout(root: "clinic/a").parse("clinic/a/users/j-d_1/profile") == .inbound(user: "j-d_1", kind: .profile))
        // '.' is not portable: NATS's subject separator, RabbitMQ's '/' (docs/brokers.md).
        #expect(l.parse("mobility/v1/users/j.d/samples") == .invalidUser("j.d"))
        #expect(!TopicLayout.isValidUser("jamie.") && !TopicLayout.isValidUser(".") && TopicLayout.isValidUser("A-z_09"))
        #expect(!TopicLayout.isValidUser(String(repeating: "a", count: 65)))
    }
}

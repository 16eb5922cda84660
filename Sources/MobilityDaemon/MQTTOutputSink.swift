import MobilityModel
import MQTTTransport
import RuleEngine

/// Publishes engine outputs over MQTT at QoS 1: alerts retained while firing (cleared after the
/// resolved transition), series and rejections not retained.
struct MQTTOutputSink: OutputSink {
    let client: MQTTClient
    let layout: TopicLayout

    func publish(_ outputs: [EngineOutput]) -> Int {
        var failures = 0
        func send(_ topic: String, _ payload: [UInt8], retain: Bool) {
            do { try client.publish(topic: topic, payload: payload, qos: 1, retain: retain) } catch { failures += 1 }
        }
        for o in outputs {
            switch o {
            case .alert(let a):
                let topic = layout.alert(a.user, rule: a.rule)
                if a.status == .firing {
                    send(topic, Array(a.json.utf8), retain: true)
                } else {
                    send(topic, Array(a.json.utf8), retain: false)
                    send(topic, [], retain: true) // clear the retained firing state
                }
            case .series(let s):
                send(layout.series(s.user, name: s.name), Array(s.json.utf8), retain: false)
            case .rejected(let user, let topic, let r):
                send(user.map { layout.rejected($0) } ?? layout.rejectedUnknown, Array(r.json(user: user, topic: topic).utf8), retain: false)
            }
        }
        return failures
    }
}

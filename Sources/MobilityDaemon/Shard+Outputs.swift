import MobilityModel
import RuleEngine
import StateStore

// The shard's output stages (``OutputPipeline``): what a batch's engine outputs become before
// they are committed.
extension Shard {
    /// Notes the users the batch changed, then runs its outputs through the stages into the
    /// pending outbox and history. Drops from `out` the reminders of acknowledged alert instances.
    func stageOutputs(_ out: inout [EngineOutput], wall: Timestamp) {
        ingestor.engine.takeTouched(into: &batchUsers)
        pendingUsers.formUnion(batchUsers)
        outputs.run(&out, wall: wall, into: &pending)
    }
}

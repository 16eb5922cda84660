extension UserState {
    /// The heap bytes this state holds, by part (element capacity × stride, plus an estimated
    /// 48 bytes of array header and allocator overhead for each allocation), for sizing. Arrays
    /// shared with the rules (alert names, folded inputs) are not counted.
    /// `mobility-bench memory` prints it beside the process's resident growth.
    package var heapFootprint: KeyValuePairs<String, Int> {
        func bytes<T>(_ a: [T]) -> Int { a.capacity == 0 ? 0 : a.capacity * MemoryLayout<T>.stride + 48 }
        return [
            "state struct": MemoryLayout<UserState>.stride,
            "open days": bytes(openDays),
            "open values": bytes(openValues),
            "input cache": bytes(inputCache),
            "folded runs": bytes(foldedRuns),
            "folded values": bytes(foldedCells),
            "sync index": bytes(syncIndex),
            "tombstones": bytes(tombstones),
            "id filter": bytes(idFilter.words),
            "alert states": bytes(alertStates),
            "alert log": bytes(alertLog),
            "boundaries": bytes(boundaries),
            "events, revised days": (events.isEmpty ? 0 : events.capacity * 64) + (revisedDays.isEmpty ? 0 : revisedDays.capacity * 4 + 48),
            "user id": user.utf8.count > 15 ? user.utf8.count + 48 : 0
        ]
    }
}

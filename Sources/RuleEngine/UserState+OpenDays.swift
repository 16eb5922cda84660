import MobilityModel

/// The open days: raw values of days still open to late data, in one array, day after day, and
/// their cached daily inputs.
extension UserState {
    /// The number of sample values held raw (open days).
    package var openValueCount: Int { openValues.count }

    /// The values of open day `i`.
    package func values(ofOpenDay i: Int) -> ArraySlice<StoredValue> { openValues[openDays[i].range] }

    /// Every open day's values, an array each (for tests and tools; the engine reads slices).
    package var openDayValues: [[StoredValue]] { openDays.map { Array(openValues[$0.range]) } }

    /// The index of an open day (the last few are checked first: most lookups are of recent days).
    @inline(__always)
    func openIndex(_ d: DayNumber) -> Int? {
        let n = openDays.count
        guard n > 0, d <= openDays[n - 1].day, d >= openDays[0].day else { return nil }
        if openDays[n - 1].day == d { return n - 1 }
        var lo = 0, hi = n - 1
        while lo < hi {
            let mid = (lo + hi) >> 1
            if openDays[mid].day < d { lo = mid + 1 } else { hi = mid }
        }
        return openDays[lo].day == d ? lo : nil
    }

    /// Where a sample id is held: (open day index, value index within the day).
    func locate(_ id: SampleID) -> (Int, Int)? {
        guard mightHold(id) else { return nil }
        let at: Int? = openValues.withUnsafeBufferPointer { vs in
            var j = vs.count - 1
            while j >= 0 { if vs[j].id == id { return j }; j -= 1 }
            return nil
        }
        guard let at else { return nil }
        var i = openDays.count - 1
        while Int(openDays[i].start) > at { i -= 1 }
        return (i, at - Int(openDays[i].start))
    }

    /// Adds a value to its open day (creating it in day order); returns the day's index.
    @discardableResult
    package mutating func append(_ v: StoredValue, day: DayNumber) -> Int {
        let i: Int
        if let o = openIndex(day) {
            i = o
        } else {
            var at = openDays.count
            while at > 0, openDays[at - 1].day > day { at -= 1 }
            let start = at < openDays.count ? openDays[at].start : Int32(openValues.count)
            openDays.insert(OpenDay(day: day, start: start, count: 0), at: at)
            if !inputCache.isEmpty {
                inputCache.growSlowly(for: cacheWidth)
                inputCache.insert(contentsOf: repeatElement(UserState.notComputed, count: cacheWidth), at: at * cacheWidth)
            }
            i = at
        }
        let end = Int(openDays[i].start + openDays[i].count)
        if end == openValues.count {
            openValues.appendGrowingSlowly(v)
        } else {
            // Late data for an earlier day: the later days' values move up by one.
            openValues.growSlowly(for: 1)
            openValues.insert(v, at: end)
            for k in (i + 1)..<openDays.count { openDays[k].start += 1 }
        }
        openDays[i].touch(from: Int(openDays[i].count))
        openDays[i].count += 1
        invalidateCache(day: i)
        noteID(v.id)
        return i
    }

    /// Removes value `j` of open day `i` (an emptied day stays, and folds to nothing, so that its
    /// stored rows are rewritten).
    mutating func removeValue(day i: Int, at j: Int) {
        openValues.remove(at: Int(openDays[i].start) + j)
        openDays[i].count -= 1
        for k in (i + 1)..<openDays.count { openDays[k].start -= 1 }
        openDays[i].touch(from: j)
        invalidateCache(day: i)
    }

    /// Removes every open value whose id is in `ids`, in one pass (emptied days stay, as with
    /// ``removeValue(day:at:)``); returns the open days (indices) that lost values, and how many went.
    mutating func removeValues(ids: Set<SampleID>) -> (days: [Int], removed: Int) {
        var days: [Int] = []
        var write = 0
        for i in openDays.indices {
            let start = Int(openDays[i].start), count = Int(openDays[i].count)
            let newStart = write
            var firstRemoved = -1
            for j in 0..<count {
                let v = openValues[start + j]
                if ids.contains(v.id) {
                    if firstRemoved < 0 { firstRemoved = j }
                    continue
                }
                if write != start + j { openValues[write] = v }
                write += 1
            }
            openDays[i].start = Int32(newStart)
            if firstRemoved >= 0 {
                openDays[i].count = Int32(write - newStart)
                openDays[i].touch(from: firstRemoved)
                invalidateCache(day: i)
                days.append(i)
            }
        }
        let removed = openValues.count - write
        if removed > 0 { openValues.removeLast(removed) }
        return (days, removed)
    }

    /// Removes the first `n` open days (folded), their values and cached inputs.
    mutating func removeFirstOpenDays(_ n: Int) {
        guard n > 0 else { return }
        let values = Int(openDays[n - 1].start + openDays[n - 1].count)
        openValues.removeFirst(values)
        if !inputCache.isEmpty { inputCache.removeFirst(n * cacheWidth) }
        openDays.removeFirst(n)
        for k in openDays.indices { openDays[k].start -= Int32(values) }
    }

    /// Forgets the cached inputs of open day `i` (its values changed).
    @inline(__always) mutating func invalidateCache(day i: Int) {
        guard !inputCache.isEmpty else { return }
        for k in (i * cacheWidth)..<((i + 1) * cacheWidth) { inputCache[k] = UserState.notComputed }
    }
}

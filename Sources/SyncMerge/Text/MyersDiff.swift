/// A change between two sequences: the elements `old` of the first replaced by the elements
/// `new` of the second (an insertion when `old` is empty, a deletion when `new` is empty).
struct Hunk: Equatable, Sendable {
    var old: Range<Int>
    var new: Range<Int>
}

/// Myers' difference algorithm ("An O(ND) Difference Algorithm and Its Variations", 1986) in
/// linear space: the common prefix and suffix are stripped, then the "middle snake" of a shortest
/// edit script splits the problem in two, recursively. Time O((N+M)·D), space O(N+M), for
/// sequences of N and M elements that differ by D insertions and deletions.
///
/// **Work cap.** Files that differ almost everywhere would make D, and the time, grow with their
/// size. Each diff has a budget of `defaultBudget` steps (one step: a diagonal visited or a pair
/// of elements compared while searching); when a search runs out of it, the part of the two
/// sequences it was searching (between the matches already found) is reported as one changed
/// hunk. The diff is then still correct (applying it turns the first sequence into the second)
/// but not minimal there: in a three-way merge, a change of the other side inside that hunk
/// conflicts. The budget keeps diffs exact up to about 2,000 changed lines scattered through a
/// 200,000-line file, and costs at most about 0.1 s per diff in a release build.
enum MyersDiff {
    /// At most about 0.1 s of work; reached only by inputs that differ in thousands of places.
    static let defaultBudget = 20_000_000

    /// The hunks turning `a` into `b`, in order, separated by at least one common element.
    static func diff(_ a: [UInt64], _ b: [UInt64], budget: Int = defaultBudget) -> [Hunk] {
        a.withUnsafeBufferPointer { a in
            b.withUnsafeBufferPointer { b in
                var search = MiddleSnakeSearch(a: a, b: b, budget: budget)
                defer { search.deallocate() }
                search.compare(xStart: 0, xEnd: a.count, yStart: 0, yEnd: b.count)
                return search.hunks
            }
        }
    }
}

/// The state of one diff: the two sequences, the two arrays of furthest-reaching points (indexed
/// by diagonal k = x − y, from −M−1 to N+1) and the hunks found so far.
private struct MiddleSnakeSearch {
    let a: UnsafeBufferPointer<UInt64>
    let b: UnsafeBufferPointer<UInt64>
    var budget: Int
    private(set) var hunks: [Hunk] = []
    private let storage: UnsafeMutablePointer<Int>
    /// x of the furthest-reaching forward path on each diagonal.
    private let forward: UnsafeMutablePointer<Int>
    /// x of the furthest-reaching backward path on each diagonal.
    private let backward: UnsafeMutablePointer<Int>

    init(a: UnsafeBufferPointer<UInt64>, b: UnsafeBufferPointer<UInt64>, budget: Int) {
        self.a = a
        self.b = b
        self.budget = budget
        let diagonals = a.count + b.count + 3
        storage = .allocate(capacity: 2 * diagonals)
        forward = storage + (b.count + 1)
        backward = storage + diagonals + (b.count + 1)
    }

    func deallocate() { storage.deallocate() }

    /// Diffs `a[xStart..<xEnd]` against `b[yStart..<yEnd]`, appending hunks in order.
    mutating func compare(xStart: Int, xEnd: Int, yStart: Int, yEnd: Int) {
        var (xStart, xEnd, yStart, yEnd) = (xStart, xEnd, yStart, yEnd)
        while xStart < xEnd && yStart < yEnd && a[xStart] == b[yStart] {
            xStart += 1
            yStart += 1
        }
        while xStart < xEnd && yStart < yEnd && a[xEnd - 1] == b[yEnd - 1] {
            xEnd -= 1
            yEnd -= 1
        }
        if xStart == xEnd || yStart == yEnd {
            if xStart < xEnd || yStart < yEnd { emit(Hunk(old: xStart..<xEnd, new: yStart..<yEnd)) }
            return
        }
        guard let (x, y) = middle(xStart: xStart, xEnd: xEnd, yStart: yStart, yEnd: yEnd) else {
            emit(Hunk(old: xStart..<xEnd, new: yStart..<yEnd))
            return
        }
        compare(xStart: xStart, xEnd: x, yStart: yStart, yEnd: y)
        compare(xStart: x, xEnd: xEnd, yStart: y, yEnd: yEnd)
    }

    private mutating func emit(_ hunk: Hunk) {
        if let last = hunks.last, last.old.upperBound == hunk.old.lowerBound,
            last.new.upperBound == hunk.new.lowerBound
        {
            hunks[hunks.count - 1] = Hunk(
                old: last.old.lowerBound..<hunk.old.upperBound, new: last.new.lowerBound..<hunk.new.upperBound)
        } else {
            hunks.append(hunk)
        }
    }

    /// A point (x, y) on a shortest edit path from (xStart, yStart) to (xEnd, yEnd), strictly
    /// between them in cost, found by searching forward from the start and backward from the end
    /// one edit at a time until the two searches meet. Needs both ranges non-empty with their
    /// first and last elements differing (so the cost is at least 2). Nil when the budget ran out.
    private mutating func middle(xStart: Int, xEnd: Int, yStart: Int, yEnd: Int) -> (Int, Int)? {
        // Locals, so the loops below keep them in registers.
        let (a, b, forward, backward) = (a, b, forward, backward)
        var budget = budget
        defer { self.budget = budget }
        let lowestDiagonal = xStart - yEnd
        let highestDiagonal = xEnd - yStart
        let forwardCenter = xStart - yStart
        let backwardCenter = xEnd - yEnd
        // The searches meet in the forward pass when the center diagonals differ by an odd number.
        let odd = (forwardCenter - backwardCenter) & 1 != 0
        var forwardLow = forwardCenter
        var forwardHigh = forwardCenter
        var backwardLow = backwardCenter
        var backwardHigh = backwardCenter
        forward[forwardCenter] = xStart
        backward[backwardCenter] = xEnd
        while true {
            // One more edit forward: diagonals forwardLow...forwardHigh, every other one.
            if forwardLow > lowestDiagonal {
                forwardLow -= 1
                forward[forwardLow - 1] = -1
            } else {
                forwardLow += 1
            }
            if forwardHigh < highestDiagonal {
                forwardHigh += 1
                forward[forwardHigh + 1] = -1
            } else {
                forwardHigh -= 1
            }
            var k = forwardHigh
            while k >= forwardLow {
                let fromBelow = forward[k - 1]
                let fromAbove = forward[k + 1]
                var x = fromBelow < fromAbove ? fromAbove : fromBelow + 1
                var y = x - k
                let snakeStart = x
                while x < xEnd && y < yEnd && a[x] == b[y] {
                    x += 1
                    y += 1
                }
                budget -= x - snakeStart + 1
                forward[k] = x
                if odd && backwardLow <= k && k <= backwardHigh && backward[k] <= x { return (x, y) }
                k -= 2
            }
            // One more edit backward.
            if backwardLow > lowestDiagonal {
                backwardLow -= 1
                backward[backwardLow - 1] = Int.max
            } else {
                backwardLow += 1
            }
            if backwardHigh < highestDiagonal {
                backwardHigh += 1
                backward[backwardHigh + 1] = Int.max
            } else {
                backwardHigh -= 1
            }
            k = backwardHigh
            while k >= backwardLow {
                let fromBelow = backward[k - 1]
                let fromAbove = backward[k + 1]
                var x = fromBelow < fromAbove ? fromBelow : fromAbove - 1
                var y = x - k
                let snakeStart = x
                while x > xStart && y > yStart && a[x - 1] == b[y - 1] {
                    x -= 1
                    y -= 1
                }
                budget -= snakeStart - x + 1
                backward[k] = x
                if !odd && forwardLow <= k && k <= forwardHigh && x <= forward[k] { return (x, y) }
                k -= 2
            }
            if budget < 0 { return nil }
        }
    }
}

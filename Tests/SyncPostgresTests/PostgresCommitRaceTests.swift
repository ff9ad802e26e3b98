import Foundation
import Logging
import SyncBackend
import Testing

@testable import SyncPostgres

/// Commits that race on the answers of the commit rules, through two stores (two processes'
/// pools) on one database: the optimistic path (a lookup, then a write that `syncfs_commit_apply`
/// checks under the container's lock) must decide exactly as the locked transaction does — each
/// case also runs with the locked transaction alone (`attempts: 0`).
@Suite struct PostgresCommitRaceTests {
    /// Optimistic tries per commit: the default, and none (the locked path alone).
    static let paths = [PostgresCommit.optimisticAttempts, 0]

    @Test(arguments: paths) func racingCreatesOfOneNameHaveOneWinner(attempts: Int) async throws {
        try await Race.run(attempts: attempts) { race in
            for round in 0..<12 {
                let outcomes = try await race.all(
                    (0..<6).map { _ in put(FileID.random(), base: 0, directory("n\(round)")) })
                let winners = outcomes.compactMap(\.committed)
                try #require(winners.count == 1, "round \(round): \(outcomes)")
                for outcome in outcomes where outcome.committed == nil {
                    #expect(outcome == .nameTaken(by: winners[0]), "round \(round)")
                }
            }
        }
    }

    @Test(arguments: paths) func racingMovesNeverPutADirectoryInsideItself(attempts: Int) async throws {
        try await Race.run(attempts: attempts) { race in
            for round in 0..<12 {
                let (x, y) = (FileID.random(), FileID.random())
                let madeX = try #require(try await race.one(put(x, base: 0, directory("x\(round)"))).committed)
                let madeY = try #require(try await race.one(put(y, base: 0, directory("y\(round)"))).committed)
                let outcomes = try await race.all([
                    put(x, base: madeX.version, directory("x\(round)", in: y)),
                    put(y, base: madeY.version, directory("y\(round)", in: x)),
                ])
                #expect(outcomes.compactMap(\.committed).count == 1, "round \(round): \(outcomes)")
                #expect(outcomes.contains(.wouldCreateCycle), "round \(round): \(outcomes)")
            }
        }
    }

    @Test(arguments: paths) func aDirectoryIsNeverDeletedUnderAChildCreatedAtTheSameTime(attempts: Int) async throws {
        try await Race.run(attempts: attempts) { race in
            for round in 0..<12 {
                let parent = FileID.random()
                let made = try #require(try await race.one(put(parent, base: 0, directory("d\(round)"))).committed)
                let outcomes = try await race.all([
                    CommitRequest(id: parent, baseVersion: made.version, change: .delete, device: "d"),
                    put(FileID.random(), base: 0, directory("child", in: parent)),
                ])
                let committed = outcomes.compactMap(\.committed)
                #expect(committed.count == 1, "round \(round): \(outcomes)")
                if committed.first?.id == parent {
                    #expect(outcomes.last == .parentMissing, "round \(round): \(outcomes)")
                } else {
                    #expect(outcomes.first == .directoryNotEmpty, "round \(round): \(outcomes)")
                }
            }
        }
    }

    /// Two stores on one database, a container on each, and commits sent through them in turn.
    struct Race {
        let containers: [PostgresContainer]
        let attempts: Int

        static func run(attempts: Int, _ body: (Race) async throws -> Void) async throws {
            let fixture = try await PostgresFixture.make()
            let first = try await fixture.open()
            let second = try await fixture.open()
            let a = try await first.createContainer(named: "race")
            let b = try #require(try await second.container(named: "race"))
            try await body(Race(containers: [a, b], attempts: attempts))
            await fixture.close(first, second)
        }

        func one(_ request: CommitRequest) async throws -> CommitOutcome {
            try await commit(request, through: containers[0])
        }

        /// Every request at once, alternating between the stores; outcomes in request order.
        func all(_ requests: [CommitRequest]) async throws -> [CommitOutcome] {
            try await withThrowingTaskGroup(of: (Int, CommitOutcome).self) { group in
                for (index, request) in requests.enumerated() {
                    let container = containers[index % containers.count]
                    group.addTask { (index, try await commit(request, through: container)) }
                }
                var outcomes = [CommitOutcome?](repeating: nil, count: requests.count)
                for try await (index, outcome) in group { outcomes[index] = outcome }
                return outcomes.map { $0! }
            }
        }

        private func commit(_ request: CommitRequest, through container: PostgresContainer) async throws
            -> CommitOutcome
        {
            try await PostgresCommit.commit(
                request, container: container.rowID, client: container.store.client,
                logger: Logger(label: "race"), attempts: attempts)
        }
    }
}

extension CommitOutcome {
    fileprivate var committed: RemoteEntry? {
        if case .committed(let entry) = self { return entry }
        return nil
    }
}

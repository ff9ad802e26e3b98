/// The cache budget keeper's thread (`--cache-budget`): evicts clean, closed, unpinned content
/// while the cache holds more than the budget.
final class CacheBudgetKeeper: Sendable {
    private let fileSystem: SyncFileSystem
    private let run: EngineRun
    let budget: Int64

    init(fileSystem: SyncFileSystem, run: EngineRun, budget: Int64) {
        self.fileSystem = fileSystem
        self.run = run
        self.budget = budget
    }

    /// Keeps the cache within the budget: checks at most once a second while content grows
    /// (writes, downloads, unpins wake it through `ContentActivity`), and otherwise sleeps —
    /// an idle mount's keeper wakes once every `idleBudgetCheck`, not every second.
    func runChecks() {
        while run.isRunning {
            _ = fileSystem.residency.eviction.enforceBudget(budget)
            run.pause(EngineDelay.budgetCheckPause)
            _ = fileSystem.residency.contentActivity.waitForActivity(timeout: Self.idleBudgetCheck)
        }
    }

    /// How often an idle mount's budget keeper looks anyway (content can also grow in ways no
    /// hook sees, e.g. a remote change installed while the keeper slept).
    static let idleBudgetCheck: Duration = .seconds(60)
}

import Testing

@testable import SyncPostgres

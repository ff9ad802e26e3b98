import SyncFS
print(SyncFSPlaceholder.probe())

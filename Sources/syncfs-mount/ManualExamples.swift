/// The EXAMPLES sections of the generated man pages, by page name (`syncfs-mount-token-create`
/// for `token create`): each a sentence saying what it does, then the command lines. A test
/// checks every `syncfs-mount` line against the command definitions (its subcommand exists, and
/// every option it names is one of that subcommand's), so the examples cannot drift from `--help`.
enum ManualExamples {
    struct Example {
        var what: String
        var lines: [String]

        init(_ what: String, _ lines: String...) {
            self.what = what
            self.lines = lines
        }
    }

    static let byPage: [String: [Example]] = [
        "syncfs-mount": [
            Example(
                "Make a container, mount it, and see how it syncs:", "syncfs-mount init ~/container",
                "mkdir -p ~/SyncFS", "syncfs-mount mount ~/container ~/SyncFS", "syncfs-mount status ~/SyncFS"),
            Example("Upload everything queued, then unmount:", "syncfs-mount unmount ~/SyncFS"),
        ],
        "syncfs-mount-init": [
            Example("Make a new, empty container (its parent folder must exist):", "syncfs-mount init ~/container"),
            Example(
                "Make it end-to-end encrypted; write down the recovery key it shows once:",
                "syncfs-mount init --encrypted ~/vault"),
        ],
        "syncfs-mount-encryption-devices": [
            Example(
                "See the devices of an encrypted container, and the ones asking to join with their codes:",
                "syncfs-mount encryption devices https://sync.example.org/family")
        ],
        "syncfs-mount-encryption-approve": [
            Example(
                "Admit the new laptop after it showed this very code:",
                "syncfs-mount encryption approve ~/vault 04839 11723 90211 55102 37410 86625")
        ],
        "syncfs-mount-encryption-remove": [
            Example(
                "Remove a lost phone (the start of its key, as `encryption devices` shows it):",
                "syncfs-mount encryption remove https://sync.example.org/family 3f2a91c0")
        ],
        "syncfs-mount-rekey": [
            Example(
                "After removing a device, re-seal everything written before under the new key epoch:",
                "syncfs-mount rekey https://sync.example.org/family --token-file ~/.config/syncfs/family.token"),
            Example(
                "Start a fresh key epoch for the current members and re-seal under it:",
                "syncfs-mount rekey ~/vault --new-epoch"),
        ],
        "syncfs-mount-mount": [
            Example(
                "Mount a container at an existing, empty folder; it returns once the folder is live:",
                "syncfs-mount mount ~/container ~/SyncFS"),
            Example("Make the container if it does not exist yet:", "syncfs-mount mount --create ~/container ~/SyncFS"),
            Example(
                "A container on a sync server (the token file from `syncfs-mount token create`, mode 600):",
                "syncfs-mount mount https://sync.example.org:8443/team ~/Team --token-file ~/.config/syncfs/team.token"),
            Example(
                "Bound the local content, and keep an indexer from downloading anything:",
                "syncfs-mount mount ~/container ~/SyncFS --cache-size 20G --no-download-for tracker-miner-f"),
            Example(
                "Read-only, attached to the terminal with a verbose log (Ctrl-C unmounts):",
                "syncfs-mount mount ~/container ~/Shelf --read-only --foreground --log-level debug"),
        ],
        "syncfs-mount-list": [
            Example(
                "Every mount, and changes waiting in state directories no daemon uploads (with the command that resumes them):",
                "syncfs-mount list", "syncfs-mount list --json")
        ],
        "syncfs-mount-unmount": [
            Example("Upload what is queued, then unmount:", "syncfs-mount unmount ~/SyncFS"),
            Example(
                "Give up uploading after 10 s without progress (the queue stays for the next mount):",
                "syncfs-mount unmount ~/SyncFS --sync-timeout 10"),
        ],
        "syncfs-mount-sync": [
            Example(
                "Wait until the container has every change made in the folder:",
                "syncfs-mount sync ~/SyncFS && echo 'all uploaded'"),
            Example("Give up after 5 minutes without progress:", "syncfs-mount sync ~/SyncFS --timeout 300"),
        ],
        "syncfs-mount-status": [
            Example(
                "The mount's state: online, files by state, cache, queue, transfers:", "syncfs-mount status ~/SyncFS"),
            Example("One file's state, for scripts:", "syncfs-mount status ~/SyncFS/report.txt --json"),
        ],
        "syncfs-mount-pin": [
            Example("Keep a folder downloaded, now and later:", "syncfs-mount pin ~/SyncFS/Projects"),
            Example("Pin without waiting for the downloads:", "syncfs-mount pin ~/SyncFS/Photos --no-wait"),
        ],
        "syncfs-mount-unpin": [
            Example("Let the cache budget evict a folder again:", "syncfs-mount unpin ~/SyncFS/Projects")
        ],
        "syncfs-mount-evict": [
            Example(
                "Free the space of files that are uploaded (they download again when read):",
                "syncfs-mount evict ~/SyncFS/Videos")
        ],
        "syncfs-mount-download": [
            Example(
                "Download a file now, waiting at most 10 minutes without progress:",
                "syncfs-mount download ~/SyncFS/Videos/talk.mp4 --timeout 600")
        ],
        "syncfs-mount-conflicts": [
            Example("The unresolved conflicts of a mount:", "syncfs-mount conflicts ~/SyncFS"),
            Example("The same as JSON:", "syncfs-mount conflicts ~/SyncFS --json"),
        ],
        "syncfs-mount-resolve": [
            Example(
                "Forget the conflicts of a file, keeping every copy as it is:",
                "syncfs-mount resolve ~/SyncFS/notes.txt")
        ],
        "syncfs-mount-events": [
            Example("Follow every change below docs/ as JSON lines:", "syncfs-mount events ~/SyncFS docs/"),
            Example(
                "Wait for one change of a file, at most a minute:",
                "syncfs-mount events ~/SyncFS report.txt --count 1 --timeout 60"),
        ],
        "syncfs-mount-verify": [
            Example(
                "Check that the folder shows what the container holds (after using several servers):",
                "syncfs-mount verify ~/Team"),
            Example(
                "The same for a script (exit 0: it matches, after any corrections):",
                "syncfs-mount verify ~/Team --json"),
        ],
        "syncfs-mount-exclude": [
            Example(
                "Keep the folder videos off this device (the others keep syncing it):",
                "syncfs-mount exclude ~/SyncFS videos")
        ],
        "syncfs-mount-include": [
            Example("Bring it back, as placeholders downloaded when read:", "syncfs-mount include ~/SyncFS videos")
        ],
        "syncfs-mount-release": [
            Example("Let the uploads the mass-delete guard holds go:", "syncfs-mount release ~/SyncFS")
        ],
        "syncfs-mount-pause": [
            Example(
                "Stop syncing for an hour and a half on a metered connection:",
                "syncfs-mount pause ~/SyncFS --for 1h30m"),
            Example("Stop every transfer, downloads too, until resumed:", "syncfs-mount pause ~/SyncFS --all"),
        ],
        "syncfs-mount-limit": [
            Example("Show the limits in force and where each comes from:", "syncfs-mount limit ~/SyncFS"),
            Example(
                "Upload at most 1 MiB/s, download without a limit, until changed:",
                "syncfs-mount limit ~/SyncFS --upload 1M --download off"),
            Example("Back to the mount's options and schedule:", "syncfs-mount limit ~/SyncFS --reset"),
        ],
        "syncfs-mount-resume": [
            Example("Sync again (the queue goes, remote changes arrive):", "syncfs-mount resume ~/SyncFS")
        ],
        "syncfs-mount-discard": [
            Example(
                "Undo the held deletions and rewrites here, from the container:", "syncfs-mount discard ~/SyncFS")
        ],
        "syncfs-mount-versions": [
            Example("The versions the container keeps of a file:", "syncfs-mount versions ~/SyncFS/report.txt")
        ],
        "syncfs-mount-trash": [
            Example("The deleted files and folders the container keeps:", "syncfs-mount trash ~/SyncFS")
        ],
        "syncfs-mount-restore": [
            Example(
                "Bring back the version before the current one:",
                "syncfs-mount restore ~/SyncFS/report.txt --version previous"),
            Example(
                "A version from `versions`, as a copy beside it:",
                "syncfs-mount restore ~/SyncFS/report.txt --version 1234 --to ~/SyncFS/report-old.txt"),
            Example(
                "A deleted folder, with what was deleted with it; or a deleted entry by its ID from `trash`:",
                "syncfs-mount restore ~/SyncFS/Projects",
                "syncfs-mount restore --id e129a3009aee439949357e379e108260 ~/SyncFS"),
        ],
        "syncfs-mount-serve": [
            Example(
                "Serve the containers under /srv/syncfs over HTTPS:",
                "syncfs-mount serve --root /srv/syncfs --listen 0.0.0.0:8443 --tls-cert /etc/syncfs/cert.pem --tls-key /etc/syncfs/key.pem"
            ),
            Example(
                "Serve from PostgreSQL and an S3 bucket (several such processes may run at once):",
                "syncfs-mount serve --database postgres://syncfs@db.example.org/syncfs --chunk-store 's3://syncfs-chunks?endpoint=https://s3.example.org&region=eu-1' --listen 0.0.0.0:8443 --tls-cert /etc/syncfs/cert.pem --tls-key /etc/syncfs/key.pem"
            ),
            Example(
                "Log JSON lines and serve Prometheus metrics on loopback port 9464 (doc/METRICS.md):",
                "syncfs-mount serve --root /srv/syncfs --listen 0.0.0.0:8443 --tls-cert /etc/syncfs/cert.pem --tls-key /etc/syncfs/key.pem --log-format json --metrics-listen 9464"
            ),
        ],
        "syncfs-mount-server-init": [
            Example(
                "Make the schema and the bucket, and a container with its first token:",
                "(umask 077; syncfs-mount server-init --database postgres://syncfs@db.example.org/syncfs --chunk-store 's3://syncfs-chunks?endpoint=https://s3.example.org&region=eu-1' --create team --token --label laptop > team.token)"
            )
        ],
        "syncfs-mount-token-create": [
            Example(
                "A token for the container team (made if missing), readable by you only:",
                "(umask 077; syncfs-mount token create --root /srv/syncfs --container team --label laptop > team.token)"
            )
        ],
        "syncfs-mount-token-list": [
            Example("The tokens of a server root:", "syncfs-mount token list --root /srv/syncfs")
        ],
        "syncfs-mount-token-revoke": [
            Example(
                "Revoke a token by its ID from `token list`:", "syncfs-mount token revoke --root /srv/syncfs 3f2a9c01")
        ],
        "syncfs-mount-user-add": [
            Example(
                "Add alice; her one-time enrolment code goes to a file only you can read:",
                "(umask 077; syncfs-mount user add --root /srv/syncfs alice > alice.code)")
        ],
        "syncfs-mount-user-list": [Example("The users of a server root:", "syncfs-mount user list --root /srv/syncfs")],
        "syncfs-mount-user-disable": [
            Example(
                "Stop every token and device of alice at once:", "syncfs-mount user disable --root /srv/syncfs alice")
        ],
        "syncfs-mount-user-enable": [
            Example("Let alice log in again:", "syncfs-mount user enable --root /srv/syncfs alice")
        ],
        "syncfs-mount-user-enrol": [
            Example(
                "A new one-time code for alice (a new machine, a lost password):",
                "(umask 077; syncfs-mount user enrol --root /srv/syncfs alice > alice.code)")
        ],
        "syncfs-mount-user-passwd": [
            Example(
                "Set alice's password (asked twice, without echo):", "syncfs-mount user passwd --root /srv/syncfs alice"
            )
        ],
        "syncfs-mount-user-totp": [
            Example(
                "Give alice a TOTP secret for her authenticator app:", "syncfs-mount user totp --root /srv/syncfs alice"
            )
        ],
        "syncfs-mount-member-add": [
            Example(
                "Make alice an editor of the container team:",
                "syncfs-mount member add --root /srv/syncfs --user alice --container team --role editor")
        ],
        "syncfs-mount-member-remove": [
            Example(
                "Take alice out of team; her tokens stop opening it at once:",
                "syncfs-mount member remove --root /srv/syncfs --user alice --container team")
        ],
        "syncfs-mount-member-list": [
            Example("Who may do what in team:", "syncfs-mount member list --root /srv/syncfs --container team")
        ],
        "syncfs-mount-device-list": [
            Example("The machines alice logged in from:", "syncfs-mount device list --root /srv/syncfs --user alice")
        ],
        "syncfs-mount-device-revoke": [
            Example(
                "A lost laptop: its tokens stop at once:", "syncfs-mount device revoke --root /srv/syncfs b71e0d44")
        ],
        "syncfs-mount-link-create": [
            Example(
                "A download link to one file, five downloads in a week:",
                "syncfs-mount link create --root /srv/syncfs --container team --path reports/q3.pdf --kind download "
                    + "--max-downloads 5 --expires 7d --server https://files.example.org"),
            Example(
                "A drop box with a password (asked twice):",
                "syncfs-mount link create --root /srv/syncfs --container team --path inbox --kind upload-only --password"
            ),
        ],
        "syncfs-mount-link-list": [
            Example("The links of team:", "syncfs-mount link list --root /srv/syncfs --container team")
        ],
        "syncfs-mount-link-revoke": [
            Example("Stop a link at once:", "syncfs-mount link revoke --root /srv/syncfs 5c0e21aa")
        ],
        "syncfs-mount-audit": [
            Example(
                "What happened in team since yesterday:",
                "syncfs-mount audit --root /srv/syncfs --container team --since 24h")
        ],
        "syncfs-mount-login": [
            Example(
                "Log in (the password is asked), then mount without a token file:",
                "syncfs-mount login https://sync.example.org:8443/team --user alice",
                "syncfs-mount mount https://sync.example.org:8443/team ~/Team"),
            Example(
                "A first login with the code from `user add` (it sets the password):",
                "syncfs-mount login https://sync.example.org:8443/team --user alice --enrolment-code-file alice.code"),
        ],
        "syncfs-mount-container-stats": [
            Example("Entries, history, chunks and bytes of a container:", "syncfs-mount container stats ~/container")
        ],
        "syncfs-mount-container-gc": [
            Example(
                "See what a collection would free, then free it:", "syncfs-mount container gc ~/container --dry-run",
                "syncfs-mount container gc ~/container")
        ],
        "syncfs-mount-container-retention": [
            Example(
                "Keep replaced versions 90 days, and at least 5 of each file:",
                "syncfs-mount container retention ~/container --days 90 --versions 5")
        ],
        "syncfs-mount-container-copy": [
            Example(
                "Move an embedded container into a PostgreSQL store:",
                "syncfs-mount container copy /srv/syncfs/team db:team --database postgres://syncfs@db.example.org/syncfs --chunk-store 's3://syncfs-chunks?endpoint=https://s3.example.org&region=eu-1'"
            )
        ],
        "syncfs-mount-recover": [
            Example(
                "Move the cached content of a state directory that lost its database out, to look at it:",
                "syncfs-mount recover ~/.local/state/syncfs/SyncFS-1f0c2a --into ~/recovered")
        ],
    ]
}

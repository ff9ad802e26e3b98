"""Where the benchmarks' own commands are: `syncfs-bench` (seed-container, seed-synthetic,
measure-pipeline, measure-server), built beside the `syncfs-mount` a script was given
(`swift build` puts both in .build/debug or .build/release). Standard library only."""

import os


def bench_binary(mount_binary):
    """The `syncfs-bench` beside `mount_binary` (after following links), whether or not it exists."""
    return os.path.join(os.path.dirname(os.path.realpath(mount_binary)), "syncfs-bench")

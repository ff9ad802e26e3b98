"""The raw results of scripts/bench.sh (RESULTS.tsv: run, target, workload, value; "ERR" on a
failure), for the report snippets that read them. Standard library only."""


def successful_values(path):
    """(target, workload) -> the values recorded, failures left out."""
    values = {}
    with open(path) as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) != 4 or parts[3] == "ERR":
                continue
            values.setdefault((parts[1], parts[2]), []).append(float(parts[3]))
    return values

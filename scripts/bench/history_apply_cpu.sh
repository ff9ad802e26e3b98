#!/bin/bash
# History's cost inside PostgreSQL: CPU and wall time per commit of syncfs_commit_apply with
# and without the copy into syncfs_versions, one backend, 5,000 commits per run, interleaved.
set -e
BINARY=${1:?usage: history_apply_cpu.sh BINARY}
WORK=$(mktemp -d)
: "${SYNCFS_TEST_PG_URL:?source the environment of scripts/services.sh start}"
ADMIN=$SYNCFS_TEST_PG_URL
NAME=syncfs_pgc_$RANDOM$RANDOM
DB=${ADMIN%/*}/$NAME
psql $ADMIN -qc "CREATE DATABASE $NAME"
trap "psql $ADMIN -qc 'DROP DATABASE IF EXISTS $NAME WITH (FORCE)'; rm -rf $WORK" EXIT
"$BINARY" server-init --database $DB --chunk-store "$WORK/blobs" --create box --tokens "$WORK/tokens" >/dev/null 2>&1
CID=$(psql $DB -qAtc "SELECT id FROM syncfs_containers WHERE name='box'")
psql $DB -q <<SQL
CREATE FUNCTION cpu_ticks() RETURNS bigint LANGUAGE sql AS \$\$
  SELECT (split_part(s, ' ', 12))::bigint + (split_part(s, ' ', 13))::bigint
  FROM (SELECT split_part(pg_read_file('/proc/' || pg_backend_pid() || '/stat'), ') ', 2) AS s) x \$\$;
CREATE PROCEDURE bench(n int) LANGUAGE plpgsql AS \$\$
DECLARE fid text; nm bytea; root text := '00000000000000000000000000000000';
BEGIN
  FOR i IN 1..n LOOP
    fid := 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa0' || (i % 8 + 1);
    nm := convert_to('f' || (i % 8 + 1), 'UTF8');
    PERFORM syncfs_commit_apply($CID, fid, root, nm, '{}', syncfs_commit_fingerprint($CID, fid, root, nm, '{}'),
      false, 'd', root, nm, 1::smallint, 420, i, 0, NULL, NULL,
      '\x00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff0100000000000000'::bytea);
    COMMIT;
  END LOOP;
END \$\$;
CALL bench(16);
SQL
WITH=$(psql $DB -qAtc "SELECT pg_get_functiondef('syncfs_commit_apply'::regproc)")
WITHOUT=$(python3 -c 'import re,sys; print(re.sub(r"INSERT INTO syncfs_versions.*?ON CONFLICT DO NOTHING;", "", sys.stdin.read(), flags=re.S))' <<< "$WITH")
N=5000
for run in 1 2 3 4 5; do
  for v in with without; do
    if [ $v = with ]; then psql $DB -qc "$WITH"; else psql $DB -qc "$WITHOUT"; fi
    out=$(psql $DB -qAt <<SQL
SELECT cpu_ticks() \gset t0_
SELECT extract(epoch from clock_timestamp()) \gset w0_
CALL bench($N);
SELECT round(1000.0 * (cpu_ticks() - :t0_cpu_ticks) / 100 / $N, 4) || ' ms CPU/commit, ' || round(1000 * (extract(epoch from clock_timestamp()) - :w0_extract) / $N, 4) || ' ms wall/commit';
SQL
)
    echo "$run $v $out load=$(cut -d' ' -f1 /proc/loadavg)"
  done
done
echo "versions: $(psql $DB -qAtc 'SELECT count(*) FROM syncfs_versions')"

#!/bin/bash
# The import benchmark (perf/bench_scale.py --until import) on a machine with many cores and no PostgreSQL
# or package registry (the device machine lent for GPU work: 16 cores). PostgreSQL 16 comes from the
# `pgserver` wheel's relocatable binaries, started here as an unprivileged user; the web app's packages
# travel as wheels. Prepare, on a machine with the registry, in the repository's root:
#   mkdir -p .dev/whl && cp -r ../shared/data/xqmeval .dev/data
#   pip download --no-deps --only-binary=:all: --python-version 3.12 --platform manylinux2014_x86_64 -d .dev pgserver==0.1.4
#   mv .dev/pgserver-*.whl .dev/pgserver.whl
#   pip download --only-binary=:all: --python-version 3.12 --platform manylinux2014_x86_64 -d .dev/whl Django==… (the web
#     app's requirements.txt, less what the target's Python already has: numpy, pandas, pyarrow, scipy, …)
# Then there (repo root, .dev carried): bash perf/device_import.sh "10:1:0" "50:1:14" …
#   each argument K_LIST:IMPORT_JOBS:IMPORT_WRITERS; figures and logs land in $OUT (logs.tgz).
set -u
PY=${PY:-$(command -v python3)}
PORT=${PGPORT_DEV:-5432}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
T0=$(date +%s)
log() { echo "[$(($(date +%s) - T0))s] $*"; }
log "cores $(nproc); $($PY -V)"
$PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .dev/whl/*.whl || exit 1
export PYTHONPATH=/tmp/site
log "wheels installed"
rm -rf /tmp/pg /tmp/pgdata
$PY - <<'EOF'
import zipfile
z = zipfile.ZipFile(".dev/pgserver.whl")
for n in z.namelist():
    if n.startswith(("pgserver/pginstall/", "pgserver.libs/")):
        z.extract(n, "/tmp/pg")
EOF
B=/tmp/pg/pgserver/pginstall/bin
chmod +x $B/*
id pgrun >/dev/null 2>&1 || useradd -M pgrun || exit 1
mkdir -p /tmp/pgdata && chown -R pgrun /tmp/pg /tmp/pgdata
runuser -u pgrun -- $B/initdb -D /tmp/pgdata -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >/tmp/initdb.log 2>&1 || { cat /tmp/initdb.log; exit 1; }
runuser -u pgrun -- $B/pg_ctl -D /tmp/pgdata -o "-p $PORT -k /tmp -c listen_addresses=127.0.0.1" -l /tmp/pg.log -w start >/dev/null || { cat /tmp/pg.log; exit 1; }
log "postgres up: $($B/postgres --version)"
if [ ! -e .venv ]; then  # bench_scale runs each stage with .venv/bin/python
  mkdir -p .venv/bin && printf '#!/bin/sh\nexec %s "$@"\n' "$PY" >.venv/bin/python && chmod +x .venv/bin/python
fi
export DATABASE_URL=postgres://postgres@127.0.0.1:$PORT/postgres XQMEVAL_DATA_DIR=$(mktemp -d)
for spec in "$@"; do  # K:JOBS:WRITERS
  IFS=: read -r ks jobs writers <<<"$spec"
  tag="k${ks//,/_}_j${jobs}_w${writers}"
  log "bench_scale --k $ks --import-jobs $jobs --import-writers $writers"
  .venv/bin/python perf/bench_scale.py --data .dev/data --k "$ks" --until import --import-jobs "$jobs" --import-writers "$writers" \
    --prefix "xq_$tag" --json "$OUT/$tag.json" >"$OUT/$tag.log" 2>&1
  grep -E "candidates/s|Error|error" "$OUT/$tag.log" | tail -6
done
(cd "$OUT" && tar czf logs.tgz *.log *.json && rm -f *.log k*.json)
runuser -u pgrun -- $B/pg_ctl -D /tmp/pgdata -m fast stop >/dev/null
log done

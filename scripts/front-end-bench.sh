#!/usr/bin/env bash
# Times the front end on a generated 12 MB program (80,000 parameters, fields and reductions,
# 5,000 stages of long sums, one stage of 20,000 chained lets): parse + check + bind + deps in
# the library, then `tessera check` on the same file. A benchmark, not part of CI.
set -euo pipefail
cd "$(dirname "$0")/.."
program=${1:-$(mktemp -d)/big.tess}
TESSERA_BIG_PROGRAM=$program cargo test --release -q -p tessera-lang --test front_end_scale \
  -- --ignored --nocapture twelve_megabytes
cargo build --release -q -p tessera
echo "tessera check $program ($(du -h "$program" | cut -f1)):"
time target/release/tessera check "$program" >/dev/null

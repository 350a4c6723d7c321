#!/usr/bin/env bash
# run.sh [RUNR RUN FLAGS...]: build runr and the demo agent, create the demo
# repository in a temp dir and run `runr run` there; exits with runr's code.
# The repository is kept so that `runr status`, `runr doctor` and `git log` can
# be tried on it afterwards.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/runr-demo.XXXXXX")
bin=$work/bin
repo=$work/repo

echo "building runr and the demo agent into $bin" >&2
(
	cd "$root"
	go build -o "$bin/runr" ./cmd/runr
	go build -o "$bin/runr-demo-agent" ./examples/demo/agent
)
"$root/examples/demo/setup.sh" "$repo"

cd "$repo"
export PATH="$bin:$PATH"
code=0
runr run "$@" || code=$?
echo >&2
echo "runr exited $code; the demo repository is $repo (try: cd $repo && $bin/runr doctor latest)" >&2
exit "$code"

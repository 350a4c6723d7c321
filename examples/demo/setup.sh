#!/usr/bin/env bash
# setup.sh DIR: create the demo's scratch git repository in DIR (which must not
# exist or be empty): the stats module from repo/ with its failing test, TASK.md
# with two milestones and runr.yaml, all in one commit so the tree is clean.
set -euo pipefail

if [[ $# -ne 1 ]]; then
	echo "usage: $0 DIR   (DIR must not exist or be empty)" >&2
	exit 64
fi
dir=$1
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

if [[ -e $dir && -n $(ls -A "$dir") ]]; then
	echo "setup.sh: $dir is not empty; pass a new directory" >&2
	exit 64
fi
mkdir -p "$dir"
cp -R "$here/repo/." "$dir/"
cd "$dir"
git -c init.defaultBranch=main init -q
# A local identity, so the commits work on machines without a global one.
git config user.name "runr demo"
git config user.email "demo@localhost"
git add -A
git commit -q -m "stats: Mean, with a failing test"
echo "demo repository ready in $dir" >&2

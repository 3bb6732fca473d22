#!/usr/bin/env bash
# The linters, as CI's first job and .pre-commit-config.yaml run them (versions pinned in
# pyproject.toml's lint extra):
#   ruff check          pyflakes and pycodestyle rules ([tool.ruff.lint] in pyproject.toml)
#   ruff format --check the code base's one format (line length 120)
#   cython-lint         the kernels, paimon_fast/_kernels/*.pyx and *.pxd
# Usage: tools/lint.sh [DIR]   (DIR defaults to the checkout; its pyproject.toml configures the tools).
# Exits non-zero when any of the three finds something, after running all three.
set -uo pipefail
cd "${1:-$(dirname "$0")/..}" || exit 2
rc=0
echo "+ ruff check ."
ruff check --no-cache . || rc=1
echo "+ ruff format --check ."
ruff format --no-cache --check . || rc=1
mapfile -t kernels < <(find paimon_fast/_kernels -maxdepth 1 \( -name '*.pyx' -o -name '*.pxd' \) 2>/dev/null | sort)
if [ ${#kernels[@]} -gt 0 ]; then
  echo "+ cython-lint paimon_fast/_kernels/*.pyx *.pxd (${#kernels[@]} files)"
  cython-lint "${kernels[@]}" || rc=1
fi
[ "$rc" = 0 ] && echo "+ lint: clean"
exit "$rc"

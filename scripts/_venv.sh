# Sourced by scripts/demo and scripts/test: make .venv (Python 3.10+) and install phi into it.
# EXTRAS selects the pip extras ("" for none, "test" for the test tools).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
py="${PYTHON:-python3}"
if ! "$py" -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
  echo "phi needs Python 3.10 or newer (found: $("$py" --version 2>&1))" >&2
  exit 1
fi
if [ ! -x .venv/bin/python ]; then
  "$py" -m venv .venv
fi
stamp=".venv/.phi-installed-${EXTRAS:-base}"
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  spec="."
  [ -n "${EXTRAS:-}" ] && spec=".[${EXTRAS}]"
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -e "$spec"
  touch "$stamp"
fi

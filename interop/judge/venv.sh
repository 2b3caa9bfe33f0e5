# Sourced by the judge interop scripts: create target/judge-venv (git-ignored) with the pinned
# packages of interop/judge/requirements.txt unless it already has them, and set $judge_python.
_judge_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
_venv="$(cd "$_judge_dir/../.." && pwd)/target/judge-venv"
_stamp="$_venv/.requirements"
if ! cmp -s "$_judge_dir/requirements.txt" "$_stamp" 2>/dev/null; then
  python3 -m venv "$_venv" >&2
  "$_venv/bin/pip" install -q --disable-pip-version-check -r "$_judge_dir/requirements.txt" >&2
  cp "$_judge_dir/requirements.txt" "$_stamp"
fi
judge_python="$_venv/bin/python"

# Sourced: pinned_venv DIR LOCKFILE makes (or remakes, when LOCKFILE changed since) a virtualenv
# at DIR holding exactly the packages of LOCKFILE. One home for the rule the bindings and the
# engine tests share: a venv inside the repository (gitignored), never the system's packages.
pinned_venv() {
  local dir="$1" lock="$2"
  if [ ! -x "$dir/bin/python" ] || ! cmp -s "$lock" "$dir/requirements.lock"; then
    rm -rf "$dir"
    python3 -m venv "$dir" >&2
    "$dir/bin/pip" install --quiet --disable-pip-version-check --no-input -r "$lock" >&2
    cp "$lock" "$dir/requirements.lock"
  fi
}

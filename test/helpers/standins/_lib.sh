# Shared by the stand-in commands: record the call, fail or hang on demand.
# STANDIN_LOG: one line per call, fields separated by \037 (command name first).
# STANDIN_STATE: folder holding the stand-ins' state and fail-<name> switches.
# STANDIN_HANG_AT=N: the Nth call (counting from 1) writes $STANDIN_STATE/hanging and
# sleeps, so a test can kill the install at that point.
# Every call also leaves its whole environment in $STANDIN_STATE/environ/<name>.<pid>
# (`export -p`, a shell builtin), so a test can prove no secret reached a child.
standin_record() {
  name="$1"; shift
  { printf '%s' "$name"; for a in "$@"; do printf '\037%s' "$a"; done; printf '\n'; } >>"$STANDIN_LOG"
  if [ -n "${STANDIN_STATE:-}" ]; then
    [ -d "$STANDIN_STATE/environ" ] || mkdir -p "$STANDIN_STATE/environ"
    export -p >"$STANDIN_STATE/environ/$name.$$"
  fi
  if [ -n "${STANDIN_HANG_AT:-}" ] && [ "$(wc -l <"$STANDIN_LOG")" -eq "$STANDIN_HANG_AT" ]; then
    echo "$name $$" >"$STANDIN_STATE/hanging"
    exec sleep 60
  fi
  if [ -f "$STANDIN_STATE/fail-$name" ]; then
    cat "$STANDIN_STATE/fail-$name" >&2
    exit 1
  fi
}

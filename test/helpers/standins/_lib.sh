# Shared by the stand-in commands: record the call, fail on demand.
# STANDIN_LOG: one line per call, fields separated by \037 (command name first).
# STANDIN_STATE: folder holding the stand-ins' state and fail-<name> switches.
standin_record() {
  name="$1"; shift
  { printf '%s' "$name"; for a in "$@"; do printf '\037%s' "$a"; done; printf '\n'; } >>"$STANDIN_LOG"
  if [ -f "$STANDIN_STATE/fail-$name" ]; then
    cat "$STANDIN_STATE/fail-$name" >&2
    exit 1
  fi
}

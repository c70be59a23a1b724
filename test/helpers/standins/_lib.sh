# Shared by the stand-in commands: record the call, fail or hang on demand.
# STANDIN_LOG: one line per call, fields separated by \037 (command name first).
# STANDIN_STATE: folder holding the stand-ins' state and fail-<name> switches.
# STANDIN_HANG_AT=N: the Nth call (counting from 1) writes $STANDIN_STATE/hanging and
# sleeps, so a test can kill the install at that point.
standin_record() {
  name="$1"; shift
  # Append and count under one lock: calls made in parallel (the install's read-only
  # checks run together) each get their own line number, so STANDIN_HANG_AT=N always
  # finds its Nth call.
  line=$({ flock 9; { printf '%s' "$name"; for a in "$@"; do printf '\037%s' "$a"; done; printf '\n'; } >>"$STANDIN_LOG"; wc -l <"$STANDIN_LOG"; } 9>>"$STANDIN_LOG.lock")
  if [ -n "${STANDIN_HANG_AT:-}" ] && [ "$line" -eq "$STANDIN_HANG_AT" ]; then
    echo "$name $$" >"$STANDIN_STATE/hanging"
    exec sleep 60
  fi
  if [ -f "$STANDIN_STATE/fail-$name" ]; then
    cat "$STANDIN_STATE/fail-$name" >&2
    exit 1
  fi
}

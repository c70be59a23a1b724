# Shared by the stand-in commands: record the call, fail or hang on demand.
# STANDIN_LOG: one line per call, fields separated by \037 (command name first).
# STANDIN_STATE: folder holding the stand-ins' state and fail-<name> switches.
# STANDIN_HANG_AT=N: the Nth call (counting from 1) writes $STANDIN_STATE/hanging and
# sleeps, so a test can kill the install at that point.
# STANDIN_HANG_ON="<command> <first argument>": the first such call hangs the same way.
# Every call also leaves its whole environment in $STANDIN_STATE/environ/<name>.<pid>
# (`export -p`, a shell builtin), so a test can prove no secret reached a child.
# Calls run concurrently (the install's checks start together), so the count and the
# "first" are decided under a lock.
standin_record() {
  name="$1"; shift
  # One write per call (O_APPEND), so calls made at the same moment never interleave.
  record="$(printf '%s' "$name"; for a in "$@"; do printf '\037%s' "$a"; done)"
  printf '%s\n' "$record" >>"$STANDIN_LOG"
  if [ -n "${STANDIN_STATE:-}" ]; then
    [ -d "$STANDIN_STATE/environ" ] || mkdir -p "$STANDIN_STATE/environ"
    export -p >"$STANDIN_STATE/environ/$name.$$"
  fi
  if [ -n "${STANDIN_HANG_AT:-}${STANDIN_HANG_ON:-}" ]; then
    hang=""
    exec 9>>"$STANDIN_STATE/.hang.lock"
    flock 9
    n=$(( $(cat "$STANDIN_STATE/.calls" 2>/dev/null || echo 0) + 1 ))
    echo "$n" >"$STANDIN_STATE/.calls"
    if [ ! -f "$STANDIN_STATE/.hung" ]; then
      if [ "${STANDIN_HANG_AT:-}" = "$n" ] || { [ -n "${STANDIN_HANG_ON:-}" ] && [ "$STANDIN_HANG_ON" = "$name ${1:-}" ]; }; then
        hang=1; : >"$STANDIN_STATE/.hung"
      fi
    fi
    flock -u 9
    exec 9>&-
    if [ -n "$hang" ]; then
      echo "$name $$" >"$STANDIN_STATE/hanging"
      exec sleep 60
    fi
  fi
  if [ -f "$STANDIN_STATE/fail-$name" ]; then
    cat "$STANDIN_STATE/fail-$name" >&2
    exit 1
  fi
}

#!/bin/sh
# Written by service-deploy: refreshes the agent's memory index (QMD), run by
# qmd-refresh.timer (systemctl --user list-timers). Re-running the install restores it.
set -eu
umask 077
qmd="{{qmdBin}}"
"$qmd" update
# Embeddings only where the models are already on this server (never downloaded from
# here); without them the index is BM25 full-text, which needs no model.
if ls "{{modelsDir}}"/*.gguf >/dev/null 2>&1; then
  "$qmd" embed || echo "qmd embed failed; BM25 search still works" >&2
fi
# The index is private data: QMD itself creates files 0644.
chmod -R go-rwx "{{cacheDir}}" "{{configDir}}"
touch "{{stamp}}"

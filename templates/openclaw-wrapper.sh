#!/bin/sh
# Written by service-deploy: runs the OpenClaw CLI with its pinned Node, whatever
# node (if any) is first on PATH.
PATH="{{nodeBin}}:$PATH"
export PATH
# The value behind the config's one env placeholder (the MCP server's Authorization
# header), from the gateway's root-only secret source, as the gateway's unit loads it.
if [ -r "{{secretsEnv}}" ]; then
  set -a
  # shellcheck source=/dev/null
  . "{{secretsEnv}}"
  set +a
fi
exec "{{nodeBin}}/node" "{{openclawEntry}}" "$@"

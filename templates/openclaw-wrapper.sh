#!/bin/sh
# Written by service-deploy: runs the OpenClaw CLI with its pinned Node, whatever
# node (if any) is first on PATH.
PATH="{{nodeBin}}:$PATH"
export PATH
exec "{{nodeBin}}/node" "{{openclawEntry}}" "$@"

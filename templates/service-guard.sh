#!/bin/sh
# Written by service-deploy: the gateway enforcer, run hourly from /etc/cron.d/service-guard.
# Keeps the agent routed only through the service's AI gateway (service-deploy guard).
exec "{{binary}}" guard "$@"

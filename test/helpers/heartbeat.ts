/**
 * The most one heartbeat request may weigh (issue 26 item 6), in the real gateway with the
 * loopback AI gateway (test/config/heartbeat.test.ts) and on the e2e's fully deployed
 * server (test/e2e/memory.ts): 9.2 KB measured (system prompt 7.8 KB, the one tool
 * `session_status`, the heartbeat prompt); the same heartbeat on the chat model, with the
 * chat's tools, skills list and memory guidance, was 39.9 KB. A runtime upgrade or a config
 * change that puts tool schemas or the skills list back into the heartbeat fails there.
 * docs/components.md ("The heartbeat") has the table.
 */
export const MAX_HEARTBEAT_REQUEST_BYTES = 10_240;

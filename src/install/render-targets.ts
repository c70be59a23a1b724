/** The files `service-deploy render` prints. Apart from render.ts so the CLI can list them without loading the install. */
export const RENDER_TARGETS = ['runtime-config', 'unit', 'guard-script', 'cron', 'channel-env', 'nginx', 'dropin', 'firewall', 'secrets', 'secrets-env', 'qmd-timer', 'qmd-service', 'qmd-script', 'qmd-mcp'] as const;
export type RenderTarget = (typeof RENDER_TARGETS)[number];

declare const SERVICE_DEPLOY_VERSION: string | undefined;

/** Set by the build (esbuild define); "dev" when run from source. */
export const VERSION: string = typeof SERVICE_DEPLOY_VERSION === 'string' ? SERVICE_DEPLOY_VERSION : '0.0.0-dev';

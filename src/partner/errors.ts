import { DeployError, type ExitCode } from '../errors.js';

/**
 * Exit codes of the partner commands, beyond the shared 0 ok / 1 failure / 2 bad input.
 * An automation tool calling `service-deploy partner ...` branches on these, so each
 * is given only on a signal the spec states or that cannot be mistaken (the status
 * first, then the API's own words):
 *
 *   10  the e-mail already exists (a 400/409 whose message says so)
 *   11  the API key is missing, invalid or refused (401)
 *   12  the voice agent is not imported into the partner's account (the API's JSON 404
 *       on map-agent, speaking of the agent)
 *   13  the customer's team-member limit (a 4xx on team-members speaking of a maximum or
 *       limit of members)
 *   14  try later: 5xx, network error, or 429 (rate limited), after the retries that are safe
 *   15  the outcome is unknown: no answer within --timeout, or a success answer without a
 *       customer id; the call may have been applied, so check before retrying
 *
 * Everything else the API refuses is exit 1, with its message verbatim.
 */
export const PartnerExitCode = {
  emailExists: 10,
  unauthorized: 11,
  agentNotFound: 12,
  teamLimit: 13,
  unavailable: 14,
  outcomeUnknown: 15,
  /** The same code: a timeout is the commonest unknown outcome. */
  timeout: 15,
} as const;

const asExitCode = (code: (typeof PartnerExitCode)[keyof typeof PartnerExitCode]): ExitCode => code;

/** The API answered with an error status; `status` and the server's own words are kept. */
export class PartnerApiError extends DeployError {
  constructor(
    message: string,
    readonly status: number | undefined,
    hint?: string,
    options?: { cause?: unknown },
  ) {
    super(message, hint, options);
  }
  override readonly code: string = 'api-refused';
}

export class EmailExistsError extends PartnerApiError {
  override readonly code: string = 'email-exists';
  override readonly exitCode = asExitCode(PartnerExitCode.emailExists);
}

export class UnauthorizedError extends PartnerApiError {
  override readonly code: string = 'unauthorized';
  override readonly exitCode = asExitCode(PartnerExitCode.unauthorized);
}

export class AgentNotFoundError extends PartnerApiError {
  override readonly code: string = 'agent-not-found';
  override readonly exitCode = asExitCode(PartnerExitCode.agentNotFound);
}

export class TeamLimitError extends PartnerApiError {
  override readonly code: string = 'team-limit';
  override readonly exitCode = asExitCode(PartnerExitCode.teamLimit);
}

/**
 * 5xx or a network failure. `mayHaveApplied` is true when the request may have reached
 * the server, so a non-idempotent call (onboarding) must not simply be repeated.
 */
export class PartnerUnavailableError extends PartnerApiError {
  override readonly code: string = 'unavailable';
  override readonly exitCode = asExitCode(PartnerExitCode.unavailable);
  constructor(
    message: string,
    status: number | undefined,
    readonly mayHaveApplied: boolean,
    hint?: string,
    options?: { cause?: unknown },
  ) {
    super(message, status, hint, options);
  }
}

/**
 * The call may or may not have been applied, and nothing in the answer says which
 * (never exit 1: scripts retry on 1, and a retry could create a second customer).
 */
export class PartnerOutcomeUnknownError extends PartnerApiError {
  override readonly code: string = 'outcome-unknown';
  override readonly exitCode = asExitCode(PartnerExitCode.outcomeUnknown);
  readonly mayHaveApplied = true;
}

/** No answer within --timeout. The request may have been applied by the server. */
export class PartnerTimeoutError extends PartnerOutcomeUnknownError {
  override readonly code: string = 'timeout';
}

/**
 * `onboard-flow` failed after the customer was created. Carries what is needed to finish
 * by hand without onboarding again: the customer id and the exact commands to resume.
 * The exit code is the failed step's.
 */
export class OnboardFlowError extends DeployError {
  override readonly exitCode: ExitCode;
  constructor(
    readonly customerId: string,
    readonly failedStep: string,
    readonly completedSteps: readonly string[],
    readonly resumeCommands: readonly string[],
    readonly stepError: DeployError,
  ) {
    super(
      `onboard-flow stopped at "${failedStep}": ${stepError.message}`,
      [
        `customer ${customerId} WAS created; do not onboard again.`,
        ...(stepError.hint ? [stepError.hint] : []),
        'Then resume with:',
        ...resumeCommands.map((command) => `    ${command}`),
      ].join('\n     '),
      { cause: stepError },
    );
    this.exitCode = stepError.exitCode;
    this.code = stepError.code;
  }
  override readonly code: string;

  /** The onboard-flow document (docs/json.md) of this failure. */
  toJSON() {
    return {
      ok: false,
      customerId: this.customerId,
      completedSteps: [...this.completedSteps],
      failedStep: this.failedStep,
      resumeCommands: [...this.resumeCommands],
      error: { code: this.code, message: this.stepError.message, hint: this.stepError.hint ?? null, exitCode: this.exitCode },
    };
  }
}

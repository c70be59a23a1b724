import { execa } from 'execa';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { BINARY, cleanEnv, runBinary } from './helpers/binary.js';

/** What bash offers for the words of `line` (the last one being completed), with the script `completion` prints. */
async function complete(line: string[], env: Record<string, string> = {}): Promise<string[]> {
  const script = (await runBinary(['completion'])).stdout;
  const words = ['service-deploy', ...line].map((w) => `'${w}'`).join(' ');
  const result = await execa('bash', ['-c', `${script}\nCOMP_WORDS=(${words}); COMP_CWORD=${line.length}; _service-deploy_yargs_completions; printf '%s\\n' "\${COMPREPLY[@]}"`], {
    env: cleanEnv({ PATH: `${path.dirname(BINARY)}:${process.env.PATH}`, ...env }),
    extendEnv: false,
    reject: false,
  });
  expect(result.stderr).toBe('');
  return result.stdout.split('\n').filter(Boolean);
}

describe('shell completion (`service-deploy completion`, bash)', () => {
  it('prints a bash script that asks the binary itself', async () => {
    const result = await runBinary(['completion']);
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toContain('complete -o bashdefault -o default -F _service-deploy_yargs_completions service-deploy');
    expect(result.stdout).toContain('service-deploy --get-yargs-completions');
  });

  it('completes commands, subcommands, flags and choices', async () => {
    expect(await complete(['do'])).toEqual(['doctor']);
    expect(await complete(['partner', ''])).toEqual(['onboard', 'map-agent', 'add-member', 'onboard-flow']);
    expect(await complete(['gateway', 're'])).toEqual(['restart']);
    expect(await complete(['install', '--reset'])).toEqual(['--reset-clean']);
  });

  it("completes --provider with the service profile's two platforms (environment overrides applied)", async () => {
    expect(await complete(['partner', 'map-agent', '--provider', ''])).toEqual(['voice-one', 'voice-two']);
    expect(await complete(['partner', 'map-agent', '--provider', 'voice-t'])).toEqual(['voice-two']);
    expect(await complete(['partner', 'onboard-flow', '--provider', ''], { SERVICE_VOICE_PROVIDERS: 'alpha,beta' })).toEqual(['alpha', 'beta']);
  });

  it("partner map-agent --help names the profile's platforms", async () => {
    const help = await runBinary(['partner', 'map-agent', '--help'], { env: cleanEnv({ SERVICE_VOICE_PROVIDERS: 'alpha,beta' }) });
    expect(help.stdout).toMatch(/--provider +Voice platform: alpha or beta/);
    expect((await runBinary(['partner', 'map-agent', '--help'])).stdout).toMatch(/--provider +Voice platform: voice-one or voice-two/);
  });
});

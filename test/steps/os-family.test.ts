import { describe, expect, it } from 'vitest';
import { loadComponents } from '../../src/components.js';
import { osFamily, parseOsRelease } from '../../src/host/os.js';
import { browserFor } from '../../src/steps/browser.js';
import { meshRepoFor } from '../../src/steps/mesh-client.js';

// What depends on the distribution is chosen from what the server reports in
// /etc/os-release (ID, ID_LIKE, VERSION_CODENAME), never guessed. The os-release files
// below are the distributions' own (trimmed to the keys read).
const OS_RELEASE = {
  'ubuntu-22.04': 'PRETTY_NAME="Ubuntu 22.04.5 LTS"\nNAME="Ubuntu"\nVERSION_ID="22.04"\nVERSION_CODENAME=jammy\nID=ubuntu\nID_LIKE=debian\nUBUNTU_CODENAME=jammy\n',
  'ubuntu-24.04': 'PRETTY_NAME="Ubuntu 24.04.1 LTS"\nNAME="Ubuntu"\nVERSION_ID="24.04"\nVERSION_CODENAME=noble\nID=ubuntu\nID_LIKE=debian\nUBUNTU_CODENAME=noble\n',
  'debian-11': 'PRETTY_NAME="Debian GNU/Linux 11 (bullseye)"\nNAME="Debian GNU/Linux"\nVERSION_ID="11"\nVERSION_CODENAME=bullseye\nID=debian\n',
  'debian-12': 'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nNAME="Debian GNU/Linux"\nVERSION_ID="12"\nVERSION_CODENAME=bookworm\nID=debian\n',
  'debian-13': 'PRETTY_NAME="Debian GNU/Linux 13 (trixie)"\nNAME="Debian GNU/Linux"\nVERSION_ID="13"\nVERSION_CODENAME=trixie\nID=debian\n',
  'mint-21': 'NAME="Linux Mint"\nVERSION_ID="21.3"\nVERSION_CODENAME=virginia\nID=linuxmint\nID_LIKE="ubuntu debian"\nPRETTY_NAME="Linux Mint 21.3"\nUBUNTU_CODENAME=jammy\n',
  arch: 'NAME="Arch Linux"\nPRETTY_NAME="Arch Linux"\nID=arch\nBUILD_ID=rolling\n',
  'debian-sid-no-codename': 'PRETTY_NAME="Debian GNU/Linux trixie/sid"\nNAME="Debian GNU/Linux"\nID=debian\n',
};
const components = loadComponents({});
const MESH = 'https://pkgs.example/stable/ubuntu';

describe('distribution-dependent choices come from /etc/os-release', () => {
  it.each([
    ['ubuntu-22.04', 'ubuntu', 'google-chrome-stable', 'https://pkgs.example/stable/ubuntu', 'jammy'],
    ['ubuntu-24.04', 'ubuntu', 'google-chrome-stable', 'https://pkgs.example/stable/ubuntu', 'noble'],
    ['debian-11', 'debian', 'chromium', 'https://pkgs.example/stable/debian', 'bullseye'],
    ['debian-12', 'debian', 'chromium', 'https://pkgs.example/stable/debian', 'bookworm'],
    ['debian-13', 'debian', 'chromium', 'https://pkgs.example/stable/debian', 'trixie'],
  ] as const)('%s: family %s, browser %s, mesh repository %s %s', (name, family, browser, repo, codename) => {
    const os = parseOsRelease(OS_RELEASE[name]);
    expect(osFamily(os)).toBe(family);
    expect(browserFor(os, components)?.package).toBe(browser);
    expect(meshRepoFor(os, MESH)).toEqual({ repo, codename });
  });

  it('an Ubuntu derivative is Ubuntu by ID_LIKE (its nearer parent first), with its own codename', () => {
    const os = parseOsRelease(OS_RELEASE['mint-21']);
    expect(os.like).toEqual(['ubuntu', 'debian']);
    expect(osFamily(os)).toBe('ubuntu');
    expect(browserFor(os, components)?.package).toBe('google-chrome-stable');
    expect(meshRepoFor(os, MESH).codename).toBe('virginia');
  });

  it('an OS of neither family gets no browser and a mesh error naming os-release, not Ubuntu guessed', () => {
    const os = parseOsRelease(OS_RELEASE.arch);
    expect(osFamily(os)).toBeUndefined();
    expect(browserFor(os, components)).toBeUndefined();
    expect(() => meshRepoFor(os, MESH)).toThrow(/Arch Linux is neither \(ID\/ID_LIKE in \/etc\/os-release\)/);
  });

  it('a missing codename is an error naming VERSION_CODENAME, not jammy/noble guessed from the version', () => {
    expect(() => meshRepoFor(parseOsRelease(OS_RELEASE['debian-sid-no-codename']), MESH)).toThrow(/does not report its release codename \(VERSION_CODENAME/);
  });
});

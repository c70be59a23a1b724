import { describe, expect, it } from 'vitest';
import { formatAllowList, parseAllowList } from '../../src/channel/allow.js';

describe('--channel-allow parsing', () => {
  it.each([
    ['203.0.113.7', ['203.0.113.7/32']],
    [' 198.51.100.0/24 , 203.0.113.7 ', ['198.51.100.0/24', '203.0.113.7/32']],
    ['203.0.113.7,203.0.113.7/32', ['203.0.113.7/32']],
    ['0.0.0.0/0', ['0.0.0.0/0']],
    ['2001:DB8::/32', ['2001:db8::/32']],
    ['2001:db8:0:0:1:0:0:1', ['2001:db8::1:0:0:1/128']],
    ['2001:db8::1:0:0:0:1', ['2001:db8:0:1::1/128']],
    ['::ffff:198.51.100.9', ['::ffff:c633:6409/128']],
    ['2001:db8::/32,10.0.0.0/8', ['10.0.0.0/8', '2001:db8::/32']],
  ])('%s -> %j', (text, expected) => {
    expect(parseAllowList(text).map((c) => c.text)).toEqual(expected);
  });

  it('any clears the list', () => {
    expect(parseAllowList('any')).toEqual([]);
    expect(parseAllowList(' ANY ')).toEqual([]);
    expect(formatAllowList(parseAllowList('10.0.0.0/8,2001:db8::/32'))).toBe('10.0.0.0/8,2001:db8::/32');
  });

  it.each([
    ['10.0.0.1/8', /host bits set \(the block is 10\.0\.0\.0\/8\)/],
    ['2001:db8::1/32', /host bits set \(the block is 2001:db8::\/32\)/],
    ['10.0.0.256', /not an IPv4 or IPv6/],
    ['010.0.0.1', /not an IPv4 or IPv6/],
    ['fe80::1%eth0', /not an IPv4 or IPv6/],
    ['10.0.0.0/-1', /prefix length/],
    ['::/129', /prefix length other than 0-128/],
    ['10.0.0.0/8,,', /empty/],
    ['', /empty/],
    ['10.0.0.0/8;rm -rf', /prefix length/],
    ['10.0.0.0;rm/8', /not an IPv4 or IPv6/],
  ])('%j is refused', (text, message) => {
    expect(() => parseAllowList(text)).toThrow(message);
  });
});

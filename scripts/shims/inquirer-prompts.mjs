// Build-time narrowing of `@inquirer/prompts` to the prompts the program uses. The
// package re-exports every prompt, and esbuild cannot drop the unused ones (they are
// not marked side-effect free): the editor prompt alone brings iconv-lite and chardet,
// a third of the bundle. Importing another prompt fails the build here, loudly.
export { default as input } from '@inquirer/input';
export { default as password } from '@inquirer/password';
export { default as confirm } from '@inquirer/confirm';

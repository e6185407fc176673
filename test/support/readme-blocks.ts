/**
 * The shell blocks of a Markdown file and how each is tried (test/e2e/readme.test.ts). Every
 * ```sh (or bash, shell) block carries a mark on the line before it, an HTML comment the rendered
 * page does not show:
 *
 *   <!-- try: run -->            its commands run in order in one shell, each must succeed (exit 0)
 *   <!-- try: background -->     it starts a server (npm start, npm run dev): started, waited for until it
 *                                is ready, stopped (SIGTERM) when the next background block starts or at the end
 *   <!-- try: skip: <reason> --> not run, for the reason given; the test lists it
 */

export type TryMode = 'run' | 'background' | 'skip';

export interface ShellBlock {
  /** 1-based line of the opening fence. */
  line: number;
  mode: TryMode;
  /** Why a skipped block is not run. */
  reason?: string;
  /** The block's text, without its fences. */
  text: string;
}

const FENCE_OPEN = /^```(sh|bash|shell)\s*$/;
const MARK = /^<!--\s*try:\s*(run|background|skip)(?::\s*([\s\S]*?))?\s*-->\s*$/;

/** Every shell block with its mark; throws naming each block without one (or with a skip without a reason). */
export function shellBlocks(markdown: string): ShellBlock[] {
  const lines = markdown.split('\n');
  const blocks: ShellBlock[] = [];
  const problems: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const fence = /^```/.exec(lines[i]);
    if (!fence) continue;
    const end = lines.findIndex((l, j) => j > i && /^```\s*$/.test(l));
    if (end < 0) throw new Error(`line ${i + 1}: a code block that never closes`);
    if (FENCE_OPEN.test(lines[i])) {
      const mark = MARK.exec(lines[i - 1] ?? '');
      if (!mark)
        problems.push(`line ${i + 1}: a shell block without a "<!-- try: run|background|skip: reason -->" mark`);
      else if (mark[1] === 'skip' && !mark[2]) problems.push(`line ${i + 1}: a skipped block must say why`);
      else
        blocks.push({
          line: i + 1,
          mode: mark[1] as TryMode,
          ...(mark[2] ? { reason: mark[2] } : {}),
          text: lines.slice(i + 1, end).join('\n'),
        });
    }
    i = end;
  }
  if (problems.length > 0) throw new Error(problems.join('\n'));
  return blocks;
}

/**
 * Commands a clean clone's test does not run as written, though the block around them runs, each
 * with what the test does instead: matched against a whole line of a block.
 */
export const REPLACED_COMMANDS: ReadonlyMap<string, string> = new Map([
  [
    'npm install',
    "not run: the clone links the installed node_modules (a full install per run takes minutes), then runs the root package's install scripts that npm install would",
  ],
]);

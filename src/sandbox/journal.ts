import { closeSync, existsSync, fsyncSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';

/** An EIP-1193 provider: the sandbox's EDR chain, or the same wrapped. */
export type ChainProvider = { request(args: { method: string; params?: unknown[] }): Promise<unknown> };

/**
 * The sandbox chain's memory across restarts: a journal of every signed transaction it mined, with
 * the block number and timestamp it was mined at. Replaying the same raw transactions at the same
 * times on a fresh chain gives the same transaction hashes, balances and receipts, so a receipt
 * link made last week still finds its transaction. One JSON object a line; each line is written
 * and synced before the transaction's answer leaves the sandbox, and a torn last line (a crash
 * while writing it) is ignored when loading.
 */
export type JournalHeader = {
  v: 1;
  genesisTime: number;
  /** The token's address when it is not SANDBOX_USDC_ADDRESS (absent: the default address). */
  token?: `0x${string}`;
};
export type JournalEntry = { raw: `0x${string}`; block: number; time: number };
/** The chain head when the sandbox stopped cleanly: empty blocks are restored up to it. */
export type JournalHead = { head: number; time: number };

type Line = JournalHeader | JournalEntry | JournalHead;

export type LoadedJournal = { header: JournalHeader; entries: JournalEntry[]; head: JournalHead | undefined };

export function readJournal(path: string): LoadedJournal | undefined {
  if (!existsSync(path)) return undefined;
  const lines: Line[] = [];
  for (const text of readFileSync(path, 'utf8').split('\n')) {
    if (text.trim() === '') continue;
    try {
      lines.push(JSON.parse(text) as Line);
    } catch {
      // Only the last line can be torn (appends are synced one by one); nothing after it counts.
      break;
    }
  }
  const [header] = lines;
  if (!header || !('genesisTime' in header) || header.v !== 1) return undefined;
  let head: JournalHead | undefined;
  const entries: JournalEntry[] = [];
  for (const line of lines.slice(1)) {
    if ('raw' in line) {
      entries.push(line);
      head = undefined;
    } else if ('head' in line) {
      head = line;
    }
  }
  return { header, entries, head };
}

export type Journal = {
  append(entry: JournalEntry): void;
  /** Marks where the chain stood, for a later `truncate` (a snapshot). */
  mark(): number;
  /** Drops every entry after a mark, as a chain revert drops its blocks. */
  truncate(mark: number): void;
  close(head: JournalHead | undefined): void;
};

/** Opens the journal for appending; a new file starts with its header. */
export function openJournal(path: string, header: JournalHeader, existing: LoadedJournal | undefined): Journal {
  const kept: Line[] = existing ? [existing.header, ...existing.entries] : [header];
  // Rewritten whole at open: drops a torn line and an old head record, so appends follow clean lines.
  rewrite(path, kept);
  let fd = openSync(path, 'a');
  let count = kept.length;
  const write = (line: Line) => {
    writeSync(fd, `${JSON.stringify(line)}\n`);
    fsyncSync(fd);
  };
  return {
    append(entry) {
      write(entry);
      kept.push(entry);
      count++;
    },
    mark: () => count,
    truncate(mark) {
      closeSync(fd);
      kept.length = mark;
      count = mark;
      rewrite(path, kept);
      fd = openSync(path, 'a');
    },
    close(head) {
      if (head) write(head);
      closeSync(fd);
    },
  };
}

function rewrite(path: string, lines: Line[]): void {
  const temporary = `${path}.tmp`;
  const fd = openSync(temporary, 'w');
  writeSync(fd, lines.map((line) => `${JSON.stringify(line)}\n`).join(''));
  fsyncSync(fd);
  closeSync(fd);
  renameSync(temporary, path);
}

type Block = { number: string; timestamp: string };

export async function latestBlock(provider: ChainProvider): Promise<{ number: number; time: number }> {
  const block = (await provider.request({ method: 'eth_getBlockByNumber', params: ['latest', false] })) as Block;
  return { number: Number(block.number), time: Number(block.timestamp) };
}

/**
 * Replays a journal onto a chain that was started at the journal's genesis time: empty blocks up
 * to each transaction's block, the transaction at its own timestamp (base fee zero, so a fee that
 * was enough then is enough now), then the head, then chain time forward to the clock.
 */
export async function replayJournal(provider: ChainProvider, journal: LoadedJournal, now: () => number): Promise<{ replayed: number; failed: number }> {
  let failed = 0;
  for (const entry of journal.entries) {
    await mineUpTo(provider, entry.block - 1);
    const head = await latestBlock(provider);
    await provider.request({ method: 'evm_setNextBlockTimestamp', params: [Math.max(entry.time, head.time)] });
    await provider.request({ method: 'hardhat_setNextBlockBaseFeePerGas', params: ['0x0'] });
    try {
      await provider.request({ method: 'eth_sendRawTransaction', params: [entry.raw] });
    } catch {
      failed++;
    }
  }
  if (journal.head) await mineUpTo(provider, journal.head.head);
  const head = await latestBlock(provider);
  const clock = Math.floor(now() / 1000);
  if (clock > head.time) {
    await provider.request({ method: 'evm_setNextBlockTimestamp', params: [clock] });
    await provider.request({ method: 'evm_mine', params: [] });
  }
  return { replayed: journal.entries.length - failed, failed };
}

async function mineUpTo(provider: ChainProvider, block: number): Promise<void> {
  const head = await latestBlock(provider);
  if (block > head.number) await provider.request({ method: 'hardhat_mine', params: [`0x${(block - head.number).toString(16)}`, '0x0'] });
}

/**
 * The provider every sandbox part uses: each raw transaction it accepts is journaled with its block
 * before the answer goes back, and snapshots and reverts keep the journal in step with the chain.
 */
export function journaledProvider(provider: ChainProvider, journal: Journal): ChainProvider {
  const marks = new Map<string, number>();
  return {
    async request(args) {
      const result = await provider.request(args);
      if (args.method === 'eth_sendRawTransaction') {
        const receipt = (await provider.request({ method: 'eth_getTransactionReceipt', params: [result] })) as { blockNumber: string } | null;
        if (receipt) {
          const block = (await provider.request({ method: 'eth_getBlockByNumber', params: [receipt.blockNumber, false] })) as Block;
          journal.append({ raw: (args.params as [`0x${string}`])[0], block: Number(block.number), time: Number(block.timestamp) });
        }
      } else if (args.method === 'evm_snapshot') {
        marks.set(String(result), journal.mark());
      } else if (args.method === 'evm_revert' && result === true) {
        const mark = marks.get(String((args.params as unknown[])[0]));
        if (mark !== undefined) journal.truncate(mark);
      }
      return result;
    },
  };
}

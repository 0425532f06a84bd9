// Phrase hints for Moonshine by shallow fusion: while decoding, a token that continues one of the
// agent's phrases (names, terms) earns a bonus on top of the model's log-probability, and the
// hint's tokens are searched even when the model would not have ranked them. A match that breaks
// off before the phrase ends gives its bonus back, so a hint can only win as a whole phrase — the
// way contextual biasing works in sherpa-onnx's hotwords and in Whisper front ends.

export const PHRASE_BIAS_DEFAULTS = {
  /** Bonus per matched token, in nats: swept on half of bench:speech's name lines, measured on the other half. */
  tokenBonus: 2,
  /** As many and as long as an agent's stt.phrases may be. */
  maxPhrases: 500,
  maxPhraseChars: 200,
} as const;

interface TrieNode {
  children: Map<number, TrieNode>;
  /** A whole phrase ends here. */
  end: boolean;
}

/** Where a hypothesis is in the phrases, and the bonus it holds for a match not yet complete. */
export interface BiasState {
  node: TrieNode;
  pending: number;
}

const newNode = (): TrieNode => ({ children: new Map(), end: false });

/** Spellings the model may write a phrase in: as given, lower case, and each word capitalised. */
export function phraseSpellings(phrase: string): string[] {
  const trimmed = phrase.trim().replace(/\s+/g, ' ');
  if (!trimmed) return [];
  const title = trimmed.replace(/\b([a-z])/g, (c) => c.toUpperCase());
  return [...new Set([trimmed, trimmed.toLowerCase(), title])];
}

export class PhraseBias {
  private readonly root: TrieNode = newNode();
  readonly start: BiasState;

  /** `encode` turns text into the model's token ids as they appear mid-sentence (word-initial). */
  constructor(
    phrases: readonly string[],
    encode: (text: string) => number[],
    private readonly tokenBonus: number = PHRASE_BIAS_DEFAULTS.tokenBonus,
  ) {
    for (const phrase of phrases.slice(0, PHRASE_BIAS_DEFAULTS.maxPhrases)) {
      for (const spelling of phraseSpellings(phrase.slice(0, PHRASE_BIAS_DEFAULTS.maxPhraseChars))) {
        const tokens = encode(spelling);
        if (tokens.length === 0) continue;
        let node = this.root;
        for (const token of tokens) {
          let child = node.children.get(token);
          if (!child) node.children.set(token, (child = newNode()));
          node = child;
        }
        node.end = true;
      }
    }
    this.start = { node: this.root, pending: 0 };
  }

  get empty(): boolean {
    return this.root.children.size === 0;
  }

  /** Tokens worth searching from this state besides the model's own best: the phrases' next tokens. */
  candidates(state: BiasState): number[] {
    if (state.node === this.root) return [...this.root.children.keys()];
    return [...new Set([...state.node.children.keys(), ...this.root.children.keys()])];
  }

  /**
   * The bonus (or, when a match breaks off, the bonus given back) for taking `token`, and the next
   * state. `finished` marks the end of the utterance: a match under way gives its bonus back.
   */
  step(state: BiasState, token: number, finished = false): { bonus: number; state: BiasState } {
    if (finished) return { bonus: -state.pending, state: this.start };
    const child = state.node.children.get(token);
    if (child) return this.advance(child, state.pending, 0);
    // Broken off: give the pending bonus back, then the token may start a phrase of its own.
    const fresh = state.node === this.root ? undefined : this.root.children.get(token);
    if (fresh) return this.advance(fresh, 0, -state.pending);
    return { bonus: -state.pending, state: this.start };
  }

  private advance(node: TrieNode, pending: number, refund: number): { bonus: number; state: BiasState } {
    const bonus = refund + this.tokenBonus;
    // A whole phrase keeps its bonus; a longer phrase through it may still go on.
    if (node.end) return { bonus, state: node.children.size > 0 ? { node, pending: 0 } : this.start };
    return { bonus, state: { node, pending: pending + this.tokenBonus } };
  }
}

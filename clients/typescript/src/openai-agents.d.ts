import type { AgentInputItem, Session, SessionHistoryRewriteArgs, SessionHistoryTransactionArgs } from "@openai/agents-core";
import type { Client } from "./index.js";

/** An OpenAI Agents SDK session kept in sessionlog: items are entries of a
 * session's tree, history changes branch it (src/openai-agents.js). */
export class SessionlogSession implements Session {
  constructor(client: Client, opts?: { sessionId?: string });
  readonly client: Client;
  /** The SDK's session id. */
  readonly sessionId: string;
  /** The sessionlog session holding it. */
  readonly id: string;
  getSessionId(): Promise<string>;
  getItems(limit?: number): Promise<AgentInputItem[]>;
  addItems(items: AgentInputItem[]): Promise<void>;
  popItem(): Promise<AgentInputItem | undefined>;
  clearSession(): Promise<void>;
  applyHistoryMutations(args: SessionHistoryRewriteArgs): Promise<void>;
  applyHistoryTransaction(args: SessionHistoryTransactionArgs): Promise<void>;
  replaceHistoryWithCompaction(items: AgentInputItem[]): Promise<void>;
}

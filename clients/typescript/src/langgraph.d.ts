import type { BaseCheckpointSaver, SerializerProtocol } from "@langchain/langgraph-checkpoint";
import type { Client } from "./index.js";

/** A LangGraph checkpoint saver whose threads are sessionlog sessions and
 * whose checkpoints are entries of their tree (src/langgraph.js). */
export class SessionlogSaver extends BaseCheckpointSaver {
  constructor(client: Client, opts?: { namespace?: string; serde?: SerializerProtocol });
  readonly client: Client;
  readonly namespace: string;
  /** The session id of a thread of this saver's namespace. */
  sessionId(threadId: string): string;
}

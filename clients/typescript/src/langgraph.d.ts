import type {
  BaseCheckpointSaver, ChannelVersions, Checkpoint, CheckpointListOptions, CheckpointMetadata, CheckpointTuple,
  PendingWrite, SerializerProtocol,
} from "@langchain/langgraph-checkpoint";
import type { RunnableConfig } from "@langchain/core/runnables";
import type { Client } from "./index.js";

/** A LangGraph checkpoint saver whose threads are sessionlog sessions and
 * whose checkpoints are entries of their tree (src/langgraph.js). */
export class SessionlogSaver extends BaseCheckpointSaver {
  constructor(client: Client, opts?: { namespace?: string; serde?: SerializerProtocol });
  readonly client: Client;
  readonly namespace: string;
  /** The session id of a thread of this saver's namespace. */
  sessionId(threadId: string): string;
  getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined>;
  list(config: RunnableConfig, options?: CheckpointListOptions): AsyncGenerator<CheckpointTuple>;
  put(config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, newVersions: ChannelVersions): Promise<RunnableConfig>;
  putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string, taskPath?: string): Promise<void>;
  deleteThread(threadId: string): Promise<void>;
}

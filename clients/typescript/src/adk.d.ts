import type { AppendEventRequest, BaseSessionService, CreateSessionRequest, DeleteSessionRequest, Event, GetSessionRequest, ListSessionsRequest, ListSessionsResponse, Session } from "@google/adk";
import type { Client } from "./index.js";

/** The sessionlog session holding an ADK session. */
export function adkSessionId(appName: string, userId: string, sessionId: string): string;

/** An ADK session service on sessionlog: sessions are sessionlog sessions,
 * events their entries, state kept in ADK's scopes (src/adk.js). */
export class SessionlogSessionService extends BaseSessionService {
  constructor(client: Client);
  readonly client: Client;
  createSession(request: CreateSessionRequest): Promise<Session>;
  getSession(request: GetSessionRequest): Promise<Session | undefined>;
  listSessions(request: ListSessionsRequest): Promise<ListSessionsResponse>;
  deleteSession(request: DeleteSessionRequest): Promise<void>;
  appendEvent(request: AppendEventRequest): Promise<Event>;
}

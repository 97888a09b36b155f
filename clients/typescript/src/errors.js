// Errors the service returns: one class per protocol code. Every error is
// a SessionlogError; catch the class of the code you handle (ConflictError
// carries where the session is now) or switch on .code.

export class SessionlogError extends Error {
  constructor(code, message, { status = 0, field, leaf, sequence, retryAfterMs, request } = {}) {
    super(`${code}: ${message}${field ? ` (at ${field})` : ""}`);
    this.name = new.target.name;
    this.code = code;
    this.status = status;
    this.field = field;
    this.leaf = leaf;
    this.sequence = sequence;
    this.retryAfterMs = retryAfterMs;
    // The request's id in the node's log, where the node keeps the cause.
    this.request = request;
  }
}

const named = (name) => ({ [name]: class extends SessionlogError {} })[name];

export const BadRequestError = named("BadRequestError");
export const InvalidSessionIDError = named("InvalidSessionIDError");
export const InvalidEntryError = named("InvalidEntryError");
export const NotFoundError = named("NotFoundError");
export const EntryNotFoundError = named("EntryNotFoundError");
export const ExistsError = named("ExistsError");
export const DuplicateIDError = named("DuplicateIDError");
export const ParentNotFoundError = named("ParentNotFoundError");
export const InvalidTargetError = named("InvalidTargetError");
export const ConflictError = named("ConflictError");
export const TooLargeError = named("TooLargeError");
export const BlobNotFoundError = named("BlobNotFoundError");
export const UploadNotFoundError = named("UploadNotFoundError");
export const RateLimitedError = named("RateLimitedError");
export const TimeoutError = named("TimeoutError");
export const UnavailableError = named("UnavailableError");
export const InternalError = named("InternalError");
export const UnauthorizedError = named("UnauthorizedError");

export const errorClasses = {
  bad_request: BadRequestError,
  invalid_session_id: InvalidSessionIDError,
  invalid_entry: InvalidEntryError,
  not_found: NotFoundError,
  entry_not_found: EntryNotFoundError,
  exists: ExistsError,
  duplicate_id: DuplicateIDError,
  parent_not_found: ParentNotFoundError,
  invalid_target: InvalidTargetError,
  conflict: ConflictError,
  too_large: TooLargeError,
  blob_not_found: BlobNotFoundError,
  upload_not_found: UploadNotFoundError,
  rate_limited: RateLimitedError,
  timeout: TimeoutError,
  unavailable: UnavailableError,
  internal: InternalError,
  unauthorized: UnauthorizedError,
};

/** The error of an error reply ({"error": {...}}), or of one that is not. */
export function errorFromReply(status, body) {
  const e = body && typeof body === "object" ? body.error : undefined;
  if (!e || typeof e !== "object") {
    return new InternalError("internal", `HTTP ${status}: a reply that is not the service's: ${String(body).slice(0, 200)}`, { status });
  }
  const Cls = errorClasses[e.code] ?? SessionlogError;
  return new Cls(e.code ?? "internal", e.message ?? "", { status, field: e.field, leaf: e.leaf, sequence: e.sequence, retryAfterMs: e.retryAfterMs, request: e.request });
}

/** Codes of a connection that was never made: nothing was sent, so no
 * request's outcome is in doubt. */
const refusedCodes = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH", "CONNECTION_REFUSED"]);

/** The error of a failure below the protocol, the same class over HTTP
 * and NATS: a connection that could not be made is UnavailableError; no
 * reply to a request sent (a timeout, a dropped connection) is
 * TimeoutError, whose outcome is unknown. */
export function transportError(e, what = "the request") {
  if (e instanceof SessionlogError) return e;
  const text = String(e?.message ?? e);
  const code = e?.code ?? e?.cause?.code;
  if (refusedCodes.has(code) || /ECONNREFUSED|connection refused|CONNECTION_REFUSED/i.test(text)) {
    return new UnavailableError("unavailable", `cannot connect to sessionlog for ${what}: ${text}`);
  }
  return new TimeoutError("timeout", `no reply to ${what}: ${text}`);
}

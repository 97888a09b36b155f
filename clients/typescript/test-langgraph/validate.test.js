// LangGraph's own checkpointer validation suite, unmodified, against
// SessionlogSaver on a node the Go test starts — and against LangGraph's
// MemorySaver in the same run, the reference go test ./clients compares
// with (run with vitest --globals from an application that installed
// @sessionlog/client and LangGraph as users do).
import { validate } from "@langchain/langgraph-checkpoint-validation";
import { MemorySaver } from "@langchain/langgraph-checkpoint";
import { Client } from "@sessionlog/client";
import { SessionlogSaver } from "@sessionlog/client/langgraph";
import { randomBytes } from "node:crypto";

const url = process.env.SESSIONLOG_TEST_URL;
const creds = process.env.SESSIONLOG_TEST_USER ? { user: process.env.SESSIONLOG_TEST_USER, password: process.env.SESSIONLOG_TEST_PASSWORD } : {};

// Each checkpointer the suite makes has a namespace of its own: savers of
// different namespaces never see each other's threads.
validate({
  checkpointerName: "sessionlog",
  createCheckpointer: () => new SessionlogSaver(new Client(url, creds), { namespace: "validate-" + randomBytes(6).toString("hex") }),
});
validate({ checkpointerName: "MemorySaver", createCheckpointer: () => new MemorySaver() });

// An Agent of the OpenAI Agents SDK with a scripted Model (no network) and
// one tool, run on a SessionlogSession, one turn per process: go test
// ./clients runs `node runner.mjs SESSION "what the user says"` for each
// turn, and prints the turn's final output and the session's items.
import { Agent, run, setTracingDisabled, tool, Usage } from "@openai/agents-core";

setTracingDisabled(true); // no network: nothing to export traces to
import { Client } from "@sessionlog/client";
import { SessionlogSession } from "@sessionlog/client/openai-agents";

const [sessionId, say] = process.argv.slice(2);
const creds = process.env.SESSIONLOG_TEST_USER ? { user: process.env.SESSIONLOG_TEST_USER, password: process.env.SESSIONLOG_TEST_PASSWORD } : {};
const session = new SessionlogSession(new Client(process.env.SESSIONLOG_TEST_URL, creds), { sessionId });

const textOf = (item) => (typeof item.content === "string" ? item.content : (item.content ?? []).map((c) => c.text ?? "").join(""));

// The model answers from the history it is given: a question about the
// weather asks the tool, a tool's result is reported, anything else is
// echoed with how many user messages it has seen.
const model = {
  async getResponse(request) {
    const input = Array.isArray(request.input) ? request.input : [{ role: "user", content: request.input }];
    const last = input.at(-1);
    const users = input.filter((i) => i.role === "user").length;
    const message = (text) => ({ type: "message", role: "assistant", status: "completed", id: "msg_" + users, content: [{ type: "output_text", text, annotations: [] }] });
    let output;
    if (last.type === "function_call_result") output = [message(`the weather: ${last.output?.text ?? last.output}`)];
    else if (/weather/.test(textOf(last))) output = [{ type: "function_call", callId: "call_" + users, name: "weather", arguments: JSON.stringify({ city: "Paris" }), status: "completed" }];
    else output = [message(`${users} user messages so far; you said: ${textOf(last)}`)];
    return { usage: new Usage(), output, responseId: "resp_" + users };
  },
  async *getStreamedResponse() {
    throw new Error("not streamed");
  },
};

const weather = tool({
  name: "weather",
  description: "The weather in a city",
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"], additionalProperties: false },
  strict: true,
  execute: async ({ city }) => `sunny in ${city}`,
});
const agent = new Agent({ name: "assistant", instructions: "Be brief.", model, tools: [weather] });

const result = await run(agent, say, { session });
console.log(JSON.stringify({ output: result.finalOutput, items: await session.getItems() }));

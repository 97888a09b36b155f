// One turn of an ADK Runner on SessionlogSessionService, per process: an
// LlmAgent with a scripted model (a BaseLlm subclass, no network) and a
// tool. Prints the turn's answer and the session's events as JSON.
//   node runner.mjs <session id> <what the user says>
import { BaseLlm, FunctionTool, LlmAgent, Runner } from "@google/adk";
import { Type } from "@google/genai";
import { Client } from "@sessionlog/client";
import { SessionlogSessionService } from "@sessionlog/client/adk";

class ScriptedModel extends BaseLlm {
  constructor() { super({ model: "scripted-1" }); }
  async *generateContentAsync(req) {
    const contents = req.contents ?? [];
    const last = contents.at(-1)?.parts?.at(-1);
    if (last?.functionResponse) {
      yield { content: { role: "model", parts: [{ text: "the weather: " + last.functionResponse.response.result }] }, turnComplete: true };
      return;
    }
    const said = last?.text ?? "";
    const users = contents.filter((c) => c.role === "user" && c.parts?.some((p) => typeof p.text === "string")).length;
    if (/weather/.test(said)) {
      yield { content: { role: "model", parts: [{ functionCall: { id: `call-${users}`, name: "get_weather", args: { city: "Paris" } } }] } };
      return;
    }
    yield { content: { role: "model", parts: [{ text: `${users} user messages so far; you said: ${said}` }] }, turnComplete: true };
  }
  async connect() { throw new Error("the scripted model has no live connection"); }
}

const [sessionId, say] = process.argv.slice(2);
const client = new Client(process.env.SESSIONLOG_TEST_URL, { user: process.env.SESSIONLOG_TEST_USER, password: process.env.SESSIONLOG_TEST_PASSWORD });
const sessionService = new SessionlogSessionService(client);
const weather = new FunctionTool({
  name: "get_weather", description: "The weather in a city",
  parameters: { type: Type.OBJECT, properties: { city: { type: Type.STRING } } },
  execute: ({ city }, ctx) => { ctx.state.set("user:asked", city); return { result: `sunny in ${city}` }; },
});
const agent = new LlmAgent({ name: "helper", model: new ScriptedModel(), instruction: "Help.", tools: [weather] });
const runner = new Runner({ appName: "runner-app", agent, sessionService });
await sessionService.getOrCreateSession({ appName: "runner-app", userId: "u", sessionId, state: { turns: 0 } });
let output = "";
for await (const ev of runner.runAsync({ userId: "u", sessionId, newMessage: { role: "user", parts: [{ text: say }] }, stateDelta: { turns: Number(process.env.TURN ?? 0) } })) {
  const text = ev.content?.parts?.map((p) => p.text).filter(Boolean).join("");
  if (text) output = text;
}
const s = await sessionService.getSession({ appName: "runner-app", userId: "u", sessionId });
console.log(JSON.stringify({ output, state: s.state, events: s.events.map((e) => [e.author, (e.content?.parts ?? []).map((p) => Object.keys(p).filter((k) => p[k] !== undefined).join("+")).join(",")]) }));
client.close();

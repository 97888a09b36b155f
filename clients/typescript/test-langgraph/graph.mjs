// A real LangGraph StateGraph on SessionlogSaver, with scripted nodes (no
// model), one phase per process: go test ./clients runs
//   node graph.mjs start  THREAD   run until the interrupt before "act"
//   node graph.mjs resume THREAD   another process resumes and finishes
//   node graph.mjs fork   THREAD   time travel: update an earlier state, run on
//   node graph.mjs big    THREAD   a 3 MiB channel value: stored apart, read whole
//   node graph.mjs damaged THREAD  entries of the saver's types but not its shape,
//                                  written by another client: passed over
// and each prints what it saw as one JSON line.
import { Annotation, END, START, StateGraph } from "@langchain/langgraph";
import { Client } from "@sessionlog/client";
import { SessionlogSaver } from "@sessionlog/client/langgraph";

const [phase, thread] = process.argv.slice(2);
const creds = process.env.SESSIONLOG_TEST_USER ? { user: process.env.SESSIONLOG_TEST_USER, password: process.env.SESSIONLOG_TEST_PASSWORD } : {};
const client = new Client(process.env.SESSIONLOG_TEST_URL, creds);
const saver = new SessionlogSaver(client, { namespace: process.env.SESSIONLOG_TEST_NAMESPACE });

const State = Annotation.Root({
  steps: Annotation({ reducer: (a, b) => a.concat(b), default: () => [] }),
  task: Annotation(),
});
const graph = new StateGraph(State)
  .addNode("plan", (s) => ({ steps: [`plan ${s.task}`] }))
  .addNode("review", (s) => ({ steps: [`review ${s.steps.length}`] }))
  .addNode("act", (s) => ({ steps: [`act on ${s.task}`] }))
  .addEdge(START, "plan")
  .addEdge("plan", "review")
  .addEdge("review", "act")
  .addEdge("act", END)
  .compile({ checkpointer: saver, interruptBefore: ["act"] });

const config = { configurable: { thread_id: thread } };
let out;
if (phase === "start") {
  const s = await graph.invoke({ task: "add retries" }, config);
  out = { steps: s.steps, next: (await graph.getState(config)).next };
} else if (phase === "resume") {
  const s = await graph.invoke(null, config);
  out = { steps: s.steps, next: (await graph.getState(config)).next };
} else if (phase === "fork") {
  // Back to the state right after "plan", with another task, and on.
  const history = [];
  for await (const h of graph.getStateHistory(config)) history.push(h);
  const afterPlan = history.find((h) => h.next.length === 1 && h.next[0] === "review");
  const forked = await graph.updateState(afterPlan.config, { task: "add backoff" });
  await graph.invoke(null, forked); // review, then the interrupt before "act"
  const s = await graph.invoke(null, config); // the fork is the thread's latest
  // The fork is a branch of the session's tree: a checkpoint with two
  // checkpoints below it.
  const { nodes } = await client.tree(saver.sessionId(thread));
  const kids = new Map();
  for (const n of nodes) {
    if (n.id.startsWith("cp-") && n.parentId) kids.set(n.parentId, (kids.get(n.parentId) ?? 0) + 1);
  }
  // Every pending write hangs under a checkpoint.
  const stray = (await client.entries(saver.sessionId(thread))).entries.filter((e) => e.customType === "langgraph_writes" && !e.parentId?.startsWith("cp-")).length;
  out = { steps: s.steps, history: history.length, branches: [...kids.values()].filter((k) => k > 1).length, stray };
} else if (phase === "big") {
  const doc = "ü".repeat(3 << 19); // 3 MiB of UTF-8
  await graph.updateState(config, { task: doc });
  const state = await graph.getState(config);
  const stored = (await client.entries(saver.sessionId(thread), { refs: true })).entries.at(-1);
  out = { length: state.values.task.length, same: state.values.task === doc, storedApart: "$blob" in (stored.data ?? {}) };
} else if (phase === "damaged") {
  const before = (await graph.getState(config)).values;
  await client.append(saver.sessionId(thread), [
    { type: "custom", customType: "langgraph_writes", data: { ns: "", checkpoint: "x", task: "t", writes: "not a list" } },
    { type: "custom", customType: "langgraph_checkpoint", data: { ns: "", id: 5 } },
    { type: "custom", customType: "langgraph_writes", data: { ns: "", checkpoint: "x", task: "t", writes: [[0, "c", 7], "junk"] } },
    { type: "custom", customType: "langgraph_checkpoint", data: "just a string" },
  ]);
  const fresh = new SessionlogSaver(client, { namespace: process.env.SESSIONLOG_TEST_NAMESPACE });
  const after = (await graph.withConfig({ checkpointer: fresh }).getState(config)).values;
  out = { same: JSON.stringify(after) === JSON.stringify(before) && JSON.stringify((await graph.getState(config)).values) === JSON.stringify(before) };
}
console.log(JSON.stringify(out));

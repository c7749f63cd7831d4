//! Lua scripts that make multi-key changes atomic on the Redis server.

use std::sync::LazyLock;

use redis::{Script, ScriptInvocation};

/// ARGV: ns, id, dedupe (1/0), window ms, rank, packed message, task, correlation,
/// conversation, now (Unix ms), content digest (hex), queues…; returns 1 when stored, 0 for a
/// duplicate within the window (same digest), or the stored digest when the id was stored
/// with other content (nothing stored). `ns:seen:<id>` holds the digest and expires with the
/// window; a store without dedupe sets it again (its window starts again). Tasks and
/// conversations are also kept in `ns:recent:<kind>` (a sorted set scored by the latest
/// publish time), `ns:first:<kind>` (a hash of the first publish time) and
/// `ns:<kind>time:<id>` (the publish time of each entry); a logged message is also appended to
/// `ns:log` (its time and keys, in log order, for pruning). `ns:msg:<id>` holds the publish
/// time, a colon and the packed message, and expires with the window (for `locate`).
static STORE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local ns, id, value, digest = ARGV[1], ARGV[2], ARGV[6], ARGV[11]
local seen = ns .. ':seen:' .. id
if ARGV[3] == '1' then
  local old = redis.call('GET', seen)
  if old then
    -- '1' is the record of a version that kept no digest: taken as the same content.
    if old == digest or old == '1' then
      return 0
    end
    return old
  end
end
redis.call('SET', seen, digest, 'PX', ARGV[4])
redis.call('SET', ns .. ':msg:' .. id, ARGV[10] .. ':' .. value, 'PX', ARGV[4])
for i = 12, #ARGV do
  redis.call('XADD', ns .. ':q:' .. ARGV[i] .. ':' .. ARGV[5], '*', 'm', value)
end
local logs = { {'task', ARGV[7]}, {'corr', ARGV[8]}, {'conv', ARGV[9]} }
for _, log in ipairs(logs) do
  if log[2] ~= '' then
    redis.call('RPUSH', ns .. ':' .. log[1] .. ':' .. log[2], value)
    if log[1] ~= 'corr' then
      redis.call('ZADD', ns .. ':recent:' .. log[1], 'GT', ARGV[10], log[2])
      redis.call('HSETNX', ns .. ':first:' .. log[1], log[2], ARGV[10])
      redis.call('RPUSH', ns .. ':' .. log[1] .. 'time:' .. log[2], ARGV[10])
    end
  end
end
if ARGV[7] ~= '' or ARGV[8] ~= '' or ARGV[9] ~= '' then
  redis.call('RPUSH', ns .. ':log', cjson.encode({ARGV[10], ARGV[7], ARGV[8], ARGV[9]}))
end
-- Last, and never fatal: the queues' waiting consumers are told (a refused PUBLISH only
-- delays them until their next look).
for i = 12, #ARGV do
  redis.pcall('PUBLISH', ns .. ':wake:' .. ARGV[i], '')
end
return 1
",
    )
});

/// Lua: `unindex(ns, id, value)` removes dead letter `id` from the index of its message,
/// `ns:dead:msg:<message id>`, reading the message id from the letter's stored `value` (its
/// details as JSON, a newline, the bytes).
const UNINDEX: &str = r"
local function unindex(ns, id, value)
  if not value then return end
  local nl = string.find(value, '\n', 1, true)
  if not nl then return end
  local ok, info = pcall(cjson.decode, string.sub(value, 1, nl - 1))
  if ok and type(info) == 'table' and type(info.message_id) == 'string' then
    redis.call('ZREM', ns .. ':dead:msg:' .. info.message_id, id)
  end
end
";

/// ARGV: ns, dead-letter value, stream key (or empty), entry id, now (Unix ms), message id (or
/// empty); settles the entry (if any) and records the dead letter, its id and time in
/// `ns:dead:ids` (scored by id) and its id in `ns:dead:msg:<message id>`; returns its id.
static DEAD: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local ns = ARGV[1]
if ARGV[3] ~= '' then
  redis.call('XACK', ARGV[3], 'workers', ARGV[4])
  redis.call('XDEL', ARGV[3], ARGV[4])
end
local n = redis.call('INCR', ns .. ':dead:seq')
redis.call('HSET', ns .. ':dead', n, ARGV[2])
redis.call('ZADD', ns .. ':dead:ids', n, n .. ':' .. ARGV[5])
if ARGV[6] ~= '' then
  redis.call('ZADD', ns .. ':dead:msg:' .. ARGV[6], n, n)
end
return n
",
    )
});

/// ARGV: ns, dead-letter id; deletes the letter with its entries in `ns:dead:ids` and in its
/// message's index; returns 1, or 0 when there was no such letter.
static REMOVE_DEAD: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&format!(
        "{UNINDEX}{}",
        r"
local ns, id = ARGV[1], ARGV[2]
local value = redis.call('HGET', ns .. ':dead', id)
if not value then return 0 end
unindex(ns, id, value)
redis.call('HDEL', ns .. ':dead', id)
redis.call('ZREMRANGEBYSCORE', ns .. ':dead:ids', id, id)
return 1
"
    ))
});

/// ARGV: ns, handler, message id, committed value, now (Unix ms); returns 1 when first, 0 when
/// already there. The record's time goes into `ns:effects_at` (the pruner's index).
static COMMIT: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local ns, handler, id = ARGV[1], ARGV[2], ARGV[3]
if redis.call('HSETNX', ns .. ':done:' .. handler, id, ARGV[4]) == 1 then
  redis.call('RPUSH', ns .. ':effects:' .. handler, id)
  redis.call('ZADD', ns .. ':effects_at', ARGV[5], cjson.encode({handler, id}))
  return 1
end
return 0
",
    )
});

/// ARGV: ns, cut (Unix ms), most entries; deletes the oldest effect records written before the
/// cut, with their handled marks; returns how many.
static PRUNE_EFFECTS: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local ns, cut, max = ARGV[1], ARGV[2], tonumber(ARGV[3])
local old = redis.call('ZRANGEBYSCORE', ns .. ':effects_at', '-inf', '(' .. cut, 'LIMIT', 0, max)
for _, member in ipairs(old) do
  local e = cjson.decode(member)
  redis.call('HDEL', ns .. ':done:' .. e[1], e[2])
  redis.call('LREM', ns .. ':effects:' .. e[1], 1, e[2])
  redis.call('ZREM', ns .. ':effects_at', member)
end
return #old
",
    )
});

/// ARGV: ns, cut (Unix ms), most entries; drops the entries of `ns:log` published before the
/// cut from the head of their task, correlation and conversation lists (the lists are in log
/// order), counting them in `ns:base` (a list's first entry keeps its number); a list left
/// empty is deleted with its times and summary. Returns how many were dropped.
static PRUNE_LOG: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local ns, cut, max = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local kinds = {'task', 'corr', 'conv'}
local n = 0
for _, item in ipairs(redis.call('LRANGE', ns .. ':log', 0, max - 1)) do
  local e = cjson.decode(item)
  if tonumber(e[1]) >= cut then break end
  for i = 1, 3 do
    local kind, id = kinds[i], e[i + 1]
    if id ~= '' then
      local list, field = ns .. ':' .. kind .. ':' .. id, kind .. ':' .. id
      local times = ns .. ':' .. kind .. 'time:' .. id
      redis.call('LPOP', list)
      redis.call('LPOP', times)
      if redis.call('LLEN', list) == 0 then
        redis.call('DEL', times)
        redis.call('HDEL', ns .. ':base', field)
        redis.call('ZREM', ns .. ':recent:' .. kind, id)
        redis.call('HDEL', ns .. ':first:' .. kind, id)
      else
        redis.call('HINCRBY', ns .. ':base', field, 1)
        local first = redis.call('LINDEX', times, 0)
        if first then redis.call('HSET', ns .. ':first:' .. kind, id, first) end
      end
    end
  end
  redis.call('LPOP', ns .. ':log')
  n = n + 1
end
return n
",
    )
});

/// ARGV: ns, cut (Unix ms), most entries; deletes the oldest dead letters recorded before the
/// cut; returns how many.
static PRUNE_DEAD: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&format!(
        "{UNINDEX}{}",
        r"
local ns, cut, max = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local n = 0
for _, member in ipairs(redis.call('ZRANGE', ns .. ':dead:ids', 0, max - 1)) do
  local id, at = string.match(member, '^(%d+):(%d+)$')
  if id == nil or tonumber(at) >= cut then break end
  unindex(ns, id, redis.call('HGET', ns .. ':dead', id))
  redis.call('HDEL', ns .. ':dead', id)
  redis.call('ZREM', ns .. ':dead:ids', member)
  n = n + 1
end
return n
"
    ))
});

/// ARGV: ns, now (Unix ms); gives every dead letter recorded before `ns:dead:ids` existed an
/// entry there, timed now; returns how many.
static INDEX_DEAD: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local ns = ARGV[1]
local n = 0
for _, id in ipairs(redis.call('HKEYS', ns .. ':dead')) do
  if redis.call('ZCOUNT', ns .. ':dead:ids', id, id) == 0 then
    redis.call('ZADD', ns .. ':dead:ids', id, id .. ':' .. ARGV[2])
    n = n + 1
  end
end
return n
",
    )
});

/// ARGV: ns, kind, id, after, limit; the entries of list `ns:<kind>:<id>` numbered after
/// `after` (entries count from 1, pruned ones included): {number of the first one returned,
/// entries kept, entries…, their publish times… (none for kind `corr`, which keeps none)}.
static READ_LOG: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local ns, kind, id = ARGV[1], ARGV[2], ARGV[3]
local after, limit = tonumber(ARGV[4]), tonumber(ARGV[5])
local list = ns .. ':' .. kind .. ':' .. id
local base = tonumber(redis.call('HGET', ns .. ':base', kind .. ':' .. id) or '0')
local start = math.max(after - base, 0)
local items = {}
local times = {}
if limit > 0 then
  items = redis.call('LRANGE', list, start, start + limit - 1)
  if kind ~= 'corr' then
    times = redis.call('LRANGE', ns .. ':' .. kind .. 'time:' .. id, start, start + limit - 1)
  end
end
return {base + start + 1, redis.call('LLEN', list), items, times}
",
    )
});

/// An invocation of the log-pruning script.
pub(super) fn prune_log() -> ScriptInvocation<'static> {
    PRUNE_LOG.prepare_invoke()
}

/// An invocation of the dead-letter pruning script.
pub(super) fn prune_dead() -> ScriptInvocation<'static> {
    PRUNE_DEAD.prepare_invoke()
}

/// An invocation of the effect-record pruning script.
pub(super) fn prune_effects() -> ScriptInvocation<'static> {
    PRUNE_EFFECTS.prepare_invoke()
}

/// An invocation of the script indexing dead letters recorded before the index existed.
pub(super) fn index_dead() -> ScriptInvocation<'static> {
    INDEX_DEAD.prepare_invoke()
}

/// An invocation of the numbered-read script.
pub(super) fn read_log() -> ScriptInvocation<'static> {
    READ_LOG.prepare_invoke()
}

/// An invocation of the publish script.
pub(super) fn store() -> ScriptInvocation<'static> {
    STORE.prepare_invoke()
}

/// An invocation of the dead-letter script.
pub(super) fn dead() -> ScriptInvocation<'static> {
    DEAD.prepare_invoke()
}

/// An invocation of the dead-letter removal script.
pub(super) fn remove_dead() -> ScriptInvocation<'static> {
    REMOVE_DEAD.prepare_invoke()
}

/// An invocation of the commit-once script.
pub(super) fn commit() -> ScriptInvocation<'static> {
    COMMIT.prepare_invoke()
}

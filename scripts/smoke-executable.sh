#!/usr/bin/env bash
# Proves dist/sku-search is self-contained: copies dist/ to a fresh folder outside the project and
# runs it from yet another folder with an empty environment (no Bun on PATH, no node_modules above),
# then logs in, creates two products, checks a semantic search (also streamed), the search page at
# /ui and its script, that the data survives a restart, and that a configured provider (a fake
# OpenAI server) is loaded and used.
# Also checks where it writes: into TMPDIR only what `bun run build` embedded for writing out, and
# nothing at all (nor into HOME) when `bun run build --assets-beside` laid those files out beside it.
# Run after either build (CI runs both). Exits non-zero with a message on the first failure.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x dist/sku-search ] || { echo "smoke: dist/sku-search is missing: run 'bun run build' first" >&2; exit 1; }

WORK=$(mktemp -d /tmp/sku-search-smoke.XXXXXX)
mkdir -p "$WORK/app" "$WORK/cwd" "$WORK/data" "$WORK/home" "$WORK/tmp" "$WORK/empty-bin"
cp -R dist/. "$WORK/app/"
PID=""
cleanup() {
  if [ -n "$PID" ]; then kill -9 "$PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT
fail() {
  echo "smoke: FAILED: $*" >&2
  echo "---- last lines of the executable's output ----" >&2
  tail -n 40 "$WORK/out.log" >&2 || true
  exit 1
}

for dir in "$WORK/cwd" "$WORK" /tmp /; do
  [ ! -e "$dir/node_modules" ] || fail "$dir/node_modules exists: the run would not prove anything"
done

port_is_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
# Below the kernel's ephemeral range (32768 and up), where an outgoing connection (to PostgreSQL,
# say) may hold the port drawn as its own end, which no connect test sees: the listen then fails.
PORT=$((20000 + RANDOM % 12768))
until port_is_free "$PORT"; do PORT=$((20000 + RANDOM % 12768)); done
BASE="http://127.0.0.1:$PORT"
PASSWORD="smoke-$RANDOM-$RANDOM-password"

start() {
  # No Bun, no Node, no npm: an empty PATH and an empty environment besides the settings.
  (cd "$WORK/cwd" && exec env -i PATH="$WORK/empty-bin" HOME="$WORK/home" TMPDIR="$WORK/tmp" \
    HOST=127.0.0.1 PORT="$PORT" DATA_DIR="$WORK/data" ADMIN_USERNAME=admin ADMIN_PASSWORD="$PASSWORD" \
    JWT_SECRET="smoke-test-secret-that-is-long-enough-0123456789" \
    "$WORK/app/sku-search" >>"$WORK/out.log" 2>&1) &
  PID=$!
  local started=$SECONDS begin
  begin=$(date +%s%N)
  until [ "$(curl -s -o /dev/null -w '%{http_code}' "$BASE/" || true)" = 200 ]; do
    kill -0 "$PID" 2>/dev/null || fail "the executable exited during startup"
    [ $((SECONDS - started)) -lt 60 ] || fail "GET / did not answer 200 within 60 s"
    sleep 0.2
  done
  echo "smoke: GET / answers 200, $((($(date +%s%N) - begin) / 1000000)) ms after start"
}

# json FILE EXPRESSION: prints EXPRESSION evaluated on the JSON in FILE as `v` (Bun here is only the test's tool).
json() { bun -e "const v = await Bun.file(process.argv[1]).json(); console.log($2)" "$1"; }

# post PATH BODY [CURL ARGS...]: POSTs and stores the answer in $WORK/body; prints the status.
post() {
  local path=$1 body=$2
  shift 2
  curl -s -o "$WORK/body" -w '%{http_code}' -X POST "$BASE$path" -d "$body" "$@"
}

create_product() {
  local status
  status=$(post /products/ "$1" -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json')
  [ "$status" = 201 ] || fail "POST /products/ answered $status: $(cat "$WORK/body")"
  json "$WORK/body" "v.id"
}

search_top() {
  local status
  status=$(post /products/search '{"query":"I need something to prepare my morning coffee","limit":5}' \
    -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json')
  [ "$status" = 200 ] || fail "POST /products/search answered $status: $(cat "$WORK/body")"
  [ "$(json "$WORK/body" "v.results.length")" = 2 ] || fail "search did not return both products: $(cat "$WORK/body")"
  json "$WORK/body" 'v.recommendation.startsWith("[LOCAL - ")' | grep -qx true ||
    fail "the recommendation does not start with '[LOCAL - ': $(cat "$WORK/body")"
  json "$WORK/body" "v.results[0].id"
}

echo "smoke: running $WORK/app/sku-search ($(($(stat -c %s "$WORK/app/sku-search") / 1000000)) MB) from $WORK/cwd on port $PORT"
start

status=$(post /auth/login "username=admin&password=$PASSWORD")
[ "$status" = 200 ] || fail "login answered $status: $(cat "$WORK/body")"
TOKEN=$(json "$WORK/body" "v.access_token")

coffee=$(create_product '{"name":"Espresso machine","description":"Fifteen-bar pump with milk frother and a large water tank","category":"Kitchen"}')
create_product '{"name":"Trail running shoes","description":"Lightweight sneakers with grippy soles for mountain paths","category":"Footwear"}' >/dev/null
[ "$(search_top)" = "$coffee" ] || fail "the espresso machine is not ranked first: $(cat "$WORK/body")"
echo "smoke: login, two products, semantic search ranked the espresso machine first"

status=$(post /products/search '{"query":"coffee"}' -H "Authorization: Bearer $TOKEN" \
  -H 'Content-Type: application/json' -H 'Accept: text/event-stream')
[ "$status" = 200 ] || fail "the streamed search answered $status: $(cat "$WORK/body")"
for event in results delta done; do
  grep -qx "event: $event" "$WORK/body" || fail "the streamed search sent no '$event' event: $(cat "$WORK/body")"
done
echo "smoke: the search streams as server-sent events (results, delta, done)"

# The search page comes from inside the executable (no src/ui here): the page under its CSP, and its script.
status=$(curl -s -D "$WORK/headers" -o "$WORK/body" -w '%{http_code}' "$BASE/ui")
[ "$status" = 200 ] || fail "GET /ui answered $status: $(cat "$WORK/body")"
grep -qi "^content-security-policy: default-src 'none'" "$WORK/headers" || fail "GET /ui has no Content-Security-Policy"
script=$(grep -o '/ui/assets/index-[a-z0-9]*\.js' "$WORK/body" | head -n 1)
[ -n "$script" ] || fail "the page names no script: $(head -c 400 "$WORK/body")"
status=$(curl -s -o "$WORK/script" -w '%{http_code}' "$BASE$script")
[ "$status" = 200 ] && [ -s "$WORK/script" ] || fail "GET $script answered $status"
echo "smoke: GET /ui serves the page with its Content-Security-Policy, and its script $script"

[ -z "$(ls -A "$WORK/home")" ] || fail "the executable wrote into HOME: $(cd "$WORK/home" && find . -type f)"
if [ -d "$WORK/app/sku-search-assets" ]; then
  [ -z "$(ls -A "$WORK/tmp")" ] || fail "built --assets-beside, it still wrote into TMPDIR: $(cd "$WORK/tmp" && find . -type f)"
  echo "smoke: files used from beside the executable; nothing written to TMPDIR or HOME"
else
  [ -d "$WORK/tmp/sku-search-$(id -u)" ] || fail "the embedded files were not written out under TMPDIR"
  echo "smoke: embedded files written out once under TMPDIR ($(du -sh "$WORK/tmp" | cut -f1)); nothing in HOME"
fi

# What `docker stop` does: SIGTERM, then a clean exit within 10 s.
kill -TERM "$PID"
for _ in $(seq 1 100); do kill -0 "$PID" 2>/dev/null || break; sleep 0.1; done
kill -0 "$PID" 2>/dev/null && fail "still running 10 s after SIGTERM"
status=0
wait "$PID" || status=$?
PID=""
[ "$status" = 0 ] || fail "exited with status $status after SIGTERM"
start
[ "$(search_top)" = "$coffee" ] || fail "after a restart the search differs: $(cat "$WORK/body")"
echo "smoke: after a restart both products are still there"

# A provider's SDK is loaded only when the settings name it (a dynamic import): the executable must
# carry it all the same. A fake OpenAI server on 127.0.0.1 (Bun is only the test's tool here).
kill -TERM "$PID"
wait "$PID" || true
PID=""
bun -e 'import { startFakeOpenAIServer } from "./tests/fakes/fake-openai-server.ts";
  console.log(startFakeOpenAIServer().url); setInterval(() => {}, 1000);' >"$WORK/fake-openai.url" &
FAKE_PID=$!
trap 'kill "$FAKE_PID" 2>/dev/null || true; cleanup' EXIT
for _ in $(seq 1 50); do [ -s "$WORK/fake-openai.url" ] && break; sleep 0.1; done
[ -s "$WORK/fake-openai.url" ] || fail "the fake OpenAI server did not start"
(cd "$WORK/cwd" && exec env -i PATH="$WORK/empty-bin" HOME="$WORK/home" TMPDIR="$WORK/tmp" \
  HOST=127.0.0.1 PORT="$PORT" DATA_DIR="$WORK/data-openai" ADMIN_USERNAME=admin ADMIN_PASSWORD="$PASSWORD" \
  OPENAI_BASE_URL="$(cat "$WORK/fake-openai.url")/v1" EMBEDDING_PROVIDER=openai GENERATION_PROVIDERS=openai,local \
  "$WORK/app/sku-search" >>"$WORK/out.log" 2>&1) &
PID=$!
started=$SECONDS
until [ "$(curl -s -o /dev/null -w '%{http_code}' "$BASE/" || true)" = 200 ]; do
  kill -0 "$PID" 2>/dev/null || fail "the executable exited during startup with OpenAI configured"
  [ $((SECONDS - started)) -lt 60 ] || fail "GET / did not answer 200 within 60 s with OpenAI configured"
  sleep 0.2
done
status=$(post /auth/login "username=admin&password=$PASSWORD")
[ "$status" = 200 ] || fail "login answered $status: $(cat "$WORK/body")"
TOKEN=$(json "$WORK/body" "v.access_token")
create_product '{"name":"Espresso machine","description":"Fifteen-bar pump","category":"Kitchen"}' >/dev/null
status=$(post /products/search '{"query":"espresso"}' -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json')
[ "$status" = 200 ] || fail "the search with OpenAI configured answered $status: $(cat "$WORK/body")"
json "$WORK/body" 'v.recommendation.startsWith("[OPENAI - ")' | grep -qx true ||
  fail "the recommendation was not written by the (fake) OpenAI model: $(cat "$WORK/body")"
echo "smoke: with OpenAI configured, its SDK embeds and writes the recommendation"

if [ -d "$WORK/app/sku-search-assets" ]; then
  # Without the folder its build laid out, it must stop at once and say why.
  kill -TERM "$PID"
  wait "$PID" || true
  PID=""
  mv "$WORK/app/sku-search-assets" "$WORK/assets-aside"
  status=0
  (cd "$WORK/cwd" && exec timeout 60 env -i PATH="$WORK/empty-bin" HOME="$WORK/home" TMPDIR="$WORK/tmp" \
    PORT="$PORT" DATA_DIR="$WORK/data" JWT_SECRET="smoke-test-secret-that-is-long-enough-0123456789" \
    "$WORK/app/sku-search" >"$WORK/missing.log" 2>&1) || status=$?
  [ "$status" != 0 ] || fail "it started without its sku-search-assets folder"
  grep -q -- "--assets-beside" "$WORK/missing.log" ||
    fail "without its folder it did not say why: $(cat "$WORK/missing.log")"
  echo "smoke: without its sku-search-assets folder it stops and says so"
fi
echo "smoke: OK"

# A tenant token for one shopper, made by the shop's backend without calling sku-search (stdlib only):
# python3 examples/tenant_token.py "$KEY" '{"category": ["Cocina"]}' 3600
import base64, hashlib, hmac, json, sys, time


def tenant_token(api_key: str, search_filter: dict, expires_in_seconds: int = 3600) -> str:
    def part(value: bytes) -> str:
        return base64.urlsafe_b64encode(value).rstrip(b"=").decode()

    key_id = api_key.split("_")[1]  # sks_<key id>_<secret>
    header = part(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    claims = {"key_id": key_id, "exp": int(time.time()) + expires_in_seconds, "filter": search_filter}
    payload = part(json.dumps(claims).encode())
    signature = hmac.new(api_key.encode(), f"{header}.{payload}".encode(), hashlib.sha256).digest()
    return f"{header}.{payload}.{part(signature)}"


if __name__ == "__main__":
    print(tenant_token(sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3]) if len(sys.argv) > 3 else 3600))

"""A Python SDK (PyPI `mcp`, pinned in requirements.lock) MCPServer behind the SDK's own OAuth
authorization server routes (mcp.server.auth: RFC 8414 metadata, dynamic registration,
authorize, token with PKCE, RFC 9728 protected-resource metadata, bearer middleware), for the
client interop test (interop/client-interop.sh).

The provider is in memory and approves at once (the SDK's OAuth example asks a person to log in;
a test needs no person): `authorize` redirects straight back with a code. Tokens are bound to the
resource the client names (RFC 8707, `validate_token_resource`). Tools: `echo`.
Usage: python oauth_server.py PORT
"""

import secrets
import sys
import time

from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken


class AutoApproveProvider:
    """OAuthAuthorizationServerProvider in memory; every authorization is approved."""

    def __init__(self) -> None:
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}

    async def get_client(self, client_id: str):
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        code = secrets.token_urlsafe(16)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or ["mcp:tools"],
            expires_at=time.time() + 300,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client, authorization_code: str):
        return self.codes.get(authorization_code)

    def _issue(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        access = secrets.token_urlsafe(24)
        refresh = secrets.token_urlsafe(24)
        self.access[access] = AccessToken(
            token=access, client_id=client_id, scopes=scopes,
            expires_at=int(time.time()) + 3600, resource=resource,
        )
        self.refresh[refresh] = RefreshToken(
            token=refresh, client_id=client_id, scopes=scopes, resource=resource,
        )
        return OAuthToken(
            access_token=access, token_type="Bearer", expires_in=3600,
            scope=" ".join(scopes), refresh_token=refresh,
        )

    async def exchange_authorization_code(self, client, authorization_code: AuthorizationCode) -> OAuthToken:
        self.codes.pop(authorization_code.code, None)
        return self._issue(client.client_id, authorization_code.scopes, authorization_code.resource)

    async def load_refresh_token(self, client, refresh_token: str):
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(self, client, refresh_token: RefreshToken, scopes: list[str]) -> OAuthToken:
        self.refresh.pop(refresh_token.token, None)
        return self._issue(client.client_id, scopes or refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token: str):
        t = self.access.get(token)
        if t is None or (t.expires_at is not None and t.expires_at < time.time()):
            return None
        return t

    async def revoke_token(self, token) -> None:
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)


if __name__ == "__main__":
    port = int(sys.argv[1])
    base = f"http://127.0.0.1:{port}"
    server = MCPServer(
        "mcp-triage-interop-python-oauth",
        auth_server_provider=AutoApproveProvider(),
        auth=AuthSettings(
            issuer_url=base,
            resource_server_url=f"{base}/mcp",
            validate_token_resource=True,
            client_registration_options=ClientRegistrationOptions(
                enabled=True, valid_scopes=["mcp:tools"], default_scopes=["mcp:tools"]
            ),
            required_scopes=["mcp:tools"],
        ),
    )

    @server.tool()
    def echo(message: str) -> str:
        """Echo the message back."""
        return message

    server.run(transport="streamable-http", host="127.0.0.1", port=port)

// Boots the Scalar API reference on /api/v1/docs.
//
// Kept out of the HTML so the page's Content-Security-Policy can forbid
// inline scripts (script-src 'self'). Every option below that touches the
// network is pinned so the page makes no request outside this server:
//   - withDefaultFonts: false  Scalar would otherwise load fonts.scalar.com.
//   - telemetry: false         no usage pings.
//   - agent / mcp disabled     no hosted "ask AI" / MCP features.
//   - showDeveloperTools       no toolbar linking to Scalar's cloud.
// The internal/webui browser test fails if any of these start to leak.
(function () {
  'use strict';

  if (typeof Scalar === 'undefined' || typeof Scalar.createApiReference !== 'function') {
    document.getElementById('app').textContent =
      'The API reference script failed to load. The raw spec is at /api/v1/openapi.json.';
    return;
  }

  Scalar.createApiReference('#app', {
    url: '/api/v1/openapi.json',
    withDefaultFonts: false,
    telemetry: false,
    agent: { disabled: true },
    mcp: { disabled: true },
    showDeveloperTools: 'never',
    // The built-in "Test Request" client stays enabled: it calls this same
    // origin, which connect-src 'self' allows.
    hideClientButton: false,
  });
})();

// Starts Swagger UI on /docs (an external script: the page's Content-Security-Policy forbids
// inline ones). The token typed into "Authorize" stays in this page's memory only.
const root = document.getElementById("swagger-ui");
window.ui = SwaggerUIBundle({
  url: root.dataset.openapi,
  dom_id: "#swagger-ui",
  deepLinking: true,
  persistAuthorization: false,
});

// A self-contained reference page: it renders /openapi.json with no outside scripts, so it
// works on a machine without internet.
export const DOCS_PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>API reference</title>
<style>
body{font:15px/1.45 system-ui,sans-serif;margin:0 auto;max-width:960px;padding:1rem;color:#1b1b1b}
h1{font-size:1.4rem}.op{border:1px solid #ddd;border-radius:6px;margin:.6rem 0;padding:.2rem .8rem}
.m{display:inline-block;min-width:4.5rem;font-weight:700;text-transform:uppercase}.get{color:#0a6}.post{color:#06c}.patch{color:#a60}.delete{color:#c33}
code,pre{font:13px ui-monospace,monospace}pre{background:#f6f6f6;padding:.6rem;overflow:auto;max-height:28rem}
summary{cursor:pointer}.tag{color:#777;font-size:.85rem}
</style></head><body>
<h1>Voice-agent call runtime: API reference</h1>
<p>Every endpoint but the public ones takes <code>Authorization: Bearer &lt;API key&gt;</code>. Errors are <code>{"error","details","code"}</code>. Machine-readable: <a href="openapi.json">openapi.json</a>.</p>
<div id="ops">Loading…</div>
<script>
fetch('openapi.json').then(r=>r.json()).then(doc=>{
  const root=document.getElementById('ops');root.textContent='';
  for(const [path,ops] of Object.entries(doc.paths)){for(const [method,op] of Object.entries(ops)){
    const d=document.createElement('details');d.className='op';
    const s=document.createElement('summary');
    s.innerHTML='<span class="m '+method+'"></span><code></code> — <span class="sum"></span> <span class="tag"></span>';
    s.querySelector('.m').textContent=method;s.querySelector('code').textContent=path;
    s.querySelector('.sum').textContent=op.summary||'';s.querySelector('.tag').textContent=(op.tags||[]).join(', ')+(op.security&&op.security.length===0?' · public':'');
    d.appendChild(s);
    const pre=document.createElement('pre');
    pre.textContent=JSON.stringify({parameters:op.parameters,requestBody:op.requestBody&&op.requestBody.content['application/json'].schema,responses:op.responses},null,2);
    d.appendChild(pre);root.appendChild(d);
  }}
}).catch(e=>{document.getElementById('ops').textContent='Could not load openapi.json: '+e});
</script></body></html>`;

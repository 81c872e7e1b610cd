-- qwen/lsp: the agent's code intelligence answered from the person's own
-- language servers, here a real gopls attached to the Go buffers the way a
-- user's config does it (a FileType autocommand: vim.lsp.start on 0.10,
-- start_client + buf_attach_client on 0.7). These cases call the plugin's
-- qwen/lsp handler as Neovim's RPC layer does (in a coroutine on 0.10, on
-- the spot on 0.7); 12_lsp_agent.lua has the whole path through qwen-ls.

local L = {}

function L.gopls(H)
  return H.attach_gopls()
end

--- Starts a small language server inside Neovim (0.10+) for the current
--- buffer and waits until it is initialized: capabilities is what it
--- answers initialize with, answer(method, params) (optional) its answer to
--- any other request, and notified(method, params, publish) (optional) sees
--- each notification, publish(uri, version, diagnostics) sending a
--- publishDiagnostics. Returns the client id; it stops when the case ends.
function L.inproc(H, name, capabilities, answer, notified)
  local id = vim.lsp.start({
    name = name,
    root_dir = H.ws,
    cmd = function(dispatchers)
      local n = 0
      local function publish(u, version, diags)
        dispatchers.notification('textDocument/publishDiagnostics', { uri = u, version = version, diagnostics = diags })
      end
      return {
        request = function(method, params, callback)
          n = n + 1
          local result = vim.NIL
          if method == 'initialize' then
            result = { capabilities = capabilities }
          elseif answer then
            result = answer(method, params)
          end
          vim.schedule(function()
            callback(nil, result)
          end)
          return true, n
        end,
        notify = function(method, params)
          if notified then
            notified(method, params, publish)
          end
          return true
        end,
        is_closing = function()
          return false
        end,
        terminate = function() end,
      }
    end,
  })
  H.defer(function()
    vim.lsp.stop_client(id, true)
  end)
  H.wait(5000, function()
    local c = vim.lsp.get_client_by_id(id)
    return c and c.initialized
  end, 'the in-process server')
  return id
end

--- Sends the plugin's qwen/lsp handler a request as qwen-ls would, and
--- returns the answer after a JSON round trip (what qwen-ls reads).
function L.call(H, method, params)
  local c = H.client()
  local handler = c.handlers['qwen/lsp']
  local req = { sessionId = 'test', method = method, params = params }
  local ctx = { method = 'qwen/lsp', client_id = c.id }
  local done, res, err
  if vim.fn.has('nvim-0.10') == 1 then
    -- As 0.10's rpc.lua: a coroutine per server request, which the handler
    -- may yield; the request is answered when it ends.
    coroutine.wrap(function()
      res, err = handler(nil, req, ctx)
      done = true
    end)()
    L.yielded = not done
    H.wait(30000, function()
      return done
    end, 'the qwen/lsp answer')
  else
    -- 0.7 answers on the spot, so the plugin waits there only a few
    -- seconds; a busy machine's gopls may take longer, and what is tested
    -- here is the answer, not how fast gopls is.
    local lsp = require('qwen.lsp')
    local t1, t2 = lsp.sync_request_timeout, lsp.sync_max_diagnostics_wait
    lsp.sync_request_timeout, lsp.sync_max_diagnostics_wait = 60000, 60000
    res, err = handler(nil, req, ctx)
    lsp.sync_request_timeout, lsp.sync_max_diagnostics_wait = t1, t2
  end
  if err then
    error('qwen/lsp ' .. method .. ' answered an error: ' .. vim.inspect(err), 2)
  end
  return vim.json.decode(vim.json.encode(res))
end

local function uri(H, rel)
  return vim.uri_from_fname(H.ws .. '/' .. rel)
end

return {
  {
    name = 'lsp: goToDefinition, references and hover come from the buffer\'s gopls',
    run = function(H)
      H.workspace()
      local gopls = L.gopls(H)
      H.setup()
      -- A line where bytes and UTF-16 units differ before `Add`.
      local f = assert(io.open(H.ws .. '/main.go', 'r'))
      local text = f:read('*a'):gsub('fmt%.Println%(calc%.Add%(2, 3%)%)', 'fmt.Println("é😀", calc.Add(2, 3))')
      f:close()
      f = assert(io.open(H.ws .. '/main.go', 'w'))
      f:write(text)
      f:close()
      vim.cmd('edit main.go')
      local qwen = H.wait_client()
      local g = gopls()
      -- gopls counts in UTF-16 only; 0.10 offers qwen-ls nothing else
      H.eq('utf-16', g.offset_encoding, "gopls's encoding")
      H.eq('utf-16', qwen.offset_encoding, "qwen-ls's encoding")
      H.ok(vim.lsp.buf_is_attached(0, g.id) and vim.lsp.buf_is_attached(0, qwen.id), 'both clients attached to main.go')
      local line = vim.api.nvim_buf_get_lines(0, 9, 10, false)[1]
      H.eq('\tfmt.Println("é😀", calc.Add(2, 3))', line, 'the line')
      -- `Add` starts at UTF-16 unit 25 (byte 28).
      local pos = { line = 9, character = 25 }
      local res = L.call(H, 'textDocument/definition', { textDocument = { uri = uri(H, 'main.go') }, position = pos })
      if vim.fn.has('nvim-0.10') == 1 then
        H.ok(L.yielded, 'the handler to yield while gopls works (Neovim is not blocked)')
      end
      H.eq(true, res.served, 'served: ' .. vim.inspect(res))
      H.eq({ 'gopls' }, res.servers, 'what answered')
      H.eq(1, #res.result, 'one definition: ' .. vim.inspect(res.result))
      local def = res.result[1]
      H.eq(uri(H, 'calc/calc.go'), def.uri or def.targetUri, 'the file')
      local r = def.range or def.targetSelectionRange
      H.eq({ line = 3, character = 5 }, r.start, 'func Add on line 4')

      res = L.call(H, 'textDocument/references', {
        textDocument = { uri = uri(H, 'main.go') },
        position = pos,
        context = { includeDeclaration = true },
      })
      H.eq(true, res.served, 'references served')
      local found = {}
      for _, l in ipairs(res.result) do
        found[#found + 1] = vim.fn.fnamemodify(vim.uri_to_fname(l.uri), ':t') .. ':' .. l.range.start.line .. ':' .. l.range.start.character
      end
      table.sort(found)
      H.eq({ 'calc.go:3:5', 'main.go:9:25' }, found, 'the references')

      res = L.call(H, 'textDocument/hover', { textDocument = { uri = uri(H, 'main.go') }, position = pos })
      H.eq(true, res.served, 'hover served')
      H.contains(res.result.contents.value, 'func calc.Add(a int, b int) int', 'the signature')
      H.contains(res.result.contents.value, 'Add returns the sum of a and b.', 'the doc')
      H.eq({ line = 9, character = 25 }, res.result.range.start, 'the hover range in UTF-16')
    end,
  },
  {
    name = 'lsp: a file not open is loaded hidden for its servers; documentSymbol, workspaceSymbol, codeAction',
    run = function(H)
      H.workspace()
      local gopls = L.gopls(H)
      H.setup()
      vim.cmd('edit main.go')
      H.wait_client()
      gopls()
      local win, cur = vim.api.nvim_get_current_win(), vim.api.nvim_get_current_buf()
      H.eq(-1, vim.fn.bufnr(H.ws .. '/calc/calc.go'), 'calc.go not open yet')
      local res = L.call(H, 'textDocument/documentSymbol', { textDocument = { uri = uri(H, 'calc/calc.go') } })
      H.eq(true, res.served, 'served: ' .. vim.inspect(res))
      local names = {}
      for _, s in ipairs(res.result) do
        table.insert(names, s.name)
      end
      table.sort(names)
      H.eq({ 'Add', 'Scale' }, names, 'the symbols of calc.go')
      -- loaded for gopls while it answered, then unloaded again
      local b = vim.fn.bufnr(H.ws .. '/calc/calc.go')
      H.ok(b > 0 and not vim.api.nvim_buf_is_loaded(b), 'calc.go unloaded after the answer')
      H.eq(0, vim.fn.buflisted(b), 'calc.go not listed')
      H.eq(win, vim.api.nvim_get_current_win(), 'the same window')
      H.eq(cur, vim.api.nvim_get_current_buf(), 'the same buffer shown')
      H.eq(1, #vim.fn.win_findbuf(cur), 'no window added')
      H.eq(0, #vim.fn.win_findbuf(b), 'calc.go in no window')

      res = L.call(H, 'workspace/symbol', { query = 'Scale' })
      H.eq(true, res.served, 'workspace/symbol served: ' .. vim.inspect(res))
      local hit
      for _, s in ipairs(res.result) do
        if s.name == 'Scale' or s.name == 'calc.Scale' then
          hit = s
        end
      end
      H.ok(hit, 'Scale among ' .. vim.inspect(res.result))
      H.eq(uri(H, 'calc/calc.go'), hit.location.uri, 'its file')

      res = L.call(H, 'textDocument/codeAction', {
        textDocument = { uri = uri(H, 'calc/calc.go') },
        range = { start = { line = 3, character = 5 }, ['end'] = { line = 3, character = 8 } },
        context = { diagnostics = {} },
      })
      H.eq(true, res.served, 'codeAction served')
      for _, a in ipairs(res.result) do
        H.ok(type(a.title) == 'string', 'a title')
        H.ok(a.edit == nil and a.command == nil, 'only what the agent reads: ' .. vim.inspect(a))
      end

      res = L.call(H, 'textDocument/prepareCallHierarchy', {
        textDocument = { uri = uri(H, 'calc/calc.go') },
        position = { line = 3, character = 5 },
      })
      H.eq(true, res.served, 'prepareCallHierarchy served')
      H.eq('Add', res.result[1].name, 'the item')
      local calls = L.call(H, 'callHierarchy/incomingCalls', { item = res.result[1] })
      H.eq(true, calls.served, 'incomingCalls served')
      H.eq('main', calls.result[1].from.name, 'main calls Add')

      -- qwen-ls asks a file it does not hold open at version 0: the first
      -- report of gopls once the file is open answers.
      res = L.call(H, 'qwen/diagnostics', { uri = uri(H, 'calc/calc.go'), version = 0, timeoutMs = 60000 })
      H.eq(true, res.served, 'diagnostics of a file not open')
      H.eq({ { uri = uri(H, 'calc/calc.go'), diagnostics = {} } }, res.result, 'no problems in calc.go')
      H.ok(not vim.api.nvim_buf_is_loaded(b), 'calc.go unloaded again')
      H.eq(cur, vim.api.nvim_get_current_buf(), 'still the same buffer shown')
    end,
  },
  {
    name = 'lsp: qwen/diagnostics waits for the version and shows gopls\'s undefined after a breaking edit',
    run = function(H)
      H.workspace()
      local gopls = L.gopls(H)
      H.setup()
      vim.cmd('edit main.go')
      H.wait_client()
      gopls()
      local buf = vim.api.nvim_get_current_buf()
      local res = L.call(H, 'qwen/diagnostics', { uri = uri(H, 'main.go') })
      H.eq(true, res.served, 'served: ' .. vim.inspect(res))
      H.eq(uri(H, 'main.go'), res.result[1].uri, 'the document')
      H.eq(0, #res.result[1].diagnostics, 'no errors to begin with')
      vim.api.nvim_buf_set_lines(buf, 9, 10, false, { '\tfmt.Println(calc.Sub(2, 3))' })
      local version = vim.lsp.util.buf_versions[buf]
      res = L.call(H, 'qwen/diagnostics', { uri = uri(H, 'main.go'), version = version, timeoutMs = 60000 })
      H.eq(true, res.served, 'served')
      H.ok(require('qwen.lsp').changed_at(buf) >= version, 'answered after diagnostics of that version')
      local d = res.result[1].diagnostics[1]
      if not d and vim.fn.has('nvim-0.10') == 0 then
        -- 0.7 opens a document at version 0, which gopls leaves out of its
        -- publishes, and has no LspNotify to tell what gopls was sent: the
        -- opened text's diagnostics arriving just after the edit count as
        -- the edit's (dated by the buffer's version, as the protocol
        -- allows). Once Neovim shows the error, the answer has it.
        H.wait(60000, function()
          return #vim.diagnostic.get(buf) > 0
        end, "gopls's error in vim.diagnostic")
        res = L.call(H, 'qwen/diagnostics', { uri = uri(H, 'main.go') })
        d = res.result[1].diagnostics[1]
      end
      H.ok(d, 'a diagnostic: ' .. vim.inspect(res))
      H.contains(d.message, 'undefined: calc.Sub', "gopls's message")
      H.eq(1, d.severity, 'an error')
      H.eq(9, d.range.start.line, 'on line 10')
      H.eq(18, d.range.start.character, 'at Sub')
      -- Without a uri: every document with diagnostics.
      res = L.call(H, 'qwen/diagnostics', {})
      H.eq(true, res.served, 'all served')
      H.eq(uri(H, 'main.go'), res.result[1].uri, 'main.go among all')
    end,
  },
  {
    name = 'lsp: a late report of the opened text, without a version, is not taken for the edit\'s',
    run = function(H)
      if vim.fn.has('nvim-0.10') == 0 then
        H.skip('an in-process language server needs Neovim 0.10')
      end
      -- As gopls does when it is slow to start: the report of the text as
      -- opened (version 0, which gopls leaves out) comes only after the
      -- first edit was sent, and the edit's own report, which names its
      -- version, a moment later. The answer must wait for the second.
      H.workspace()
      H.setup()
      vim.cmd('edit main.go')
      H.wait_client()
      local buf = vim.api.nvim_get_current_buf()
      L.inproc(H, 'late', { textDocumentSync = 1 }, nil, function(method, params, publish)
        if method == 'textDocument/didChange' then
          local u, v = params.textDocument.uri, params.textDocument.version
          vim.defer_fn(function()
            publish(u, nil, {})
          end, 30)
          vim.defer_fn(function()
            publish(u, v, { {
              range = { start = { line = 9, character = 1 }, ['end'] = { line = 9, character = 4 } },
              severity = 1,
              message = 'broken at ' .. v,
              source = 'late',
            } })
          end, 300)
        end
      end)
      -- Twice: first while the server has published nothing since it
      -- opened the file, then once it is known to name versions.
      for round = 1, 2 do
        vim.api.nvim_buf_set_lines(buf, 9, 10, false, { '\tfmt.Println(calc.Sub(2, ' .. round .. '))' })
        local version = vim.lsp.util.buf_versions[buf]
        local res = L.call(H, 'qwen/diagnostics', { uri = uri(H, 'main.go'), version = version, timeoutMs = 10000 })
        H.eq(true, res.served, 'served, round ' .. round)
        H.eq({ 'late' }, res.servers, 'what answered')
        local d = res.result[1].diagnostics[1]
        H.ok(d, 'round ' .. round .. ': the report of the edit, not the stale one: ' .. vim.inspect(res))
        H.eq('broken at ' .. version, d.message, 'the report of that very version')
      end
    end,
  },
  {
    name = 'lsp: positions are converted between qwen-ls\'s UTF-16 and a server that counts bytes',
    run = function(H)
      if vim.fn.has('nvim-0.10') == 0 then
        H.skip('an in-process language server needs Neovim 0.10')
      end
      -- gopls counts only in UTF-16, so a small in-process server that
      -- negotiates UTF-8 (as clangd or rust-analyzer may) stands in for it:
      -- it answers a definition at the very position it was asked.
      H.workspace()
      H.setup()
      local f = assert(io.open(H.ws .. '/main.go', 'r'))
      local text = f:read('*a'):gsub('fmt%.Println%(calc%.Add%(2, 3%)%)', 'fmt.Println("é😀", calc.Add(2, 3))')
      f:close()
      f = assert(io.open(H.ws .. '/main.go', 'w'))
      f:write(text)
      f:close()
      vim.cmd('edit main.go')
      H.wait_client()
      local asked = {}
      local id = L.inproc(H, 'bytes', { positionEncoding = 'utf-8', definitionProvider = true, textDocumentSync = 1 }, function(method, params)
        if method ~= 'textDocument/definition' then
          return vim.NIL
        end
        -- copies: a real server's answer shares no tables with its request
        local p = params.position
        table.insert(asked, vim.deepcopy(p))
        return { {
          uri = params.textDocument.uri,
          range = { start = vim.deepcopy(p), ['end'] = { line = p.line, character = p.character + 3 } },
        } }
      end)
      H.eq('utf-8', vim.lsp.get_client_by_id(id).offset_encoding, "the server's encoding")
      local res = L.call(H, 'textDocument/definition', { textDocument = { uri = uri(H, 'main.go') }, position = { line = 9, character = 25 } })
      H.eq(true, res.served, 'served')
      H.eq({ 'bytes' }, res.servers, 'what answered')
      H.eq({ { line = 9, character = 28 } }, asked, 'the server asked at byte 28')
      H.eq({ start = { line = 9, character = 25 }, ['end'] = { line = 9, character = 28 } }, res.result[1].range, 'the answer in UTF-16')
      -- vim.diagnostic counts bytes; the answer counts in qwen-ls's encoding.
      local ns = vim.api.nvim_create_namespace('test-linter')
      vim.diagnostic.set(ns, 0, { { lnum = 9, col = 28, end_lnum = 9, end_col = 31, message = 'add', severity = 2, source = 'linter' } })
      res = L.call(H, 'qwen/diagnostics', { uri = uri(H, 'main.go') })
      H.eq({ {
        uri = uri(H, 'main.go'),
        diagnostics = { {
          range = { start = { line = 9, character = 25 }, ['end'] = { line = 9, character = 28 } },
          severity = 2,
          message = 'add',
          source = 'linter',
        } },
      } }, res.result, 'the diagnostic in UTF-16')
    end,
  },
  {
    name = 'lsp: :checkhealth qwen names the language servers the agent can use for the open file',
    run = function(H)
      H.workspace()
      H.model('chat.txtar')
      local gopls = L.gopls(H)
      H.setup()
      vim.cmd('edit main.go')
      H.wait_client()
      gopls()
      vim.cmd('silent checkhealth qwen')
      local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n')
      H.contains(text, 'code intelligence', 'the section')
      H.contains(text, 'gopls, attached to main.go: the agent asks it for definition, references, hover, documentSymbol, workspaceSymbol, implementation, callHierarchy, codeActions, diagnostics', "Neovim's gopls")
      -- qwen-ls's side, for the same file: gopls, but not here
      H.contains(text, 'This folder is not trusted: qwen-ls starts no language server of its own here.', 'the untrusted folder')
      if vim.fn.exepath('gopls') ~= '' then
        H.contains(text, 'gopls (go) is installed and covers this file, but not in an untrusted folder', "qwen-ls's gopls")
      else
        H.contains(text, 'gopls (go) covers this file but is not installed (gopls not on PATH)', "qwen-ls's gopls")
      end
      H.ok(not text:find('ERROR', 1, true), 'no errors:\n' .. text)
      if os.getenv('QWEN_TEST_VERBOSE') then
        H.log(text)
      end
    end,
  },
  {
    name = 'lsp: :checkhealth qwen in a trusted folder without a Neovim server: qwen-ls starts its own',
    run = function(H)
      H.workspace()
      H.trust()
      H.model('chat.txtar')
      H.setup()
      vim.cmd('edit main.go')
      H.wait_client()
      vim.cmd('silent checkhealth qwen')
      local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n')
      H.contains(text, 'No language server of Neovim is attached to main.go: the agent uses one qwen-ls starts (below), if any.', 'no Neovim server')
      if vim.fn.exepath('gopls') ~= '' then
        H.contains(text, "qwen-ls can start gopls (go) for this file (gopls) when Neovim's servers do not cover it", "qwen-ls's gopls")
      else
        H.contains(text, 'gopls (go) ', 'gopls named')
      end
      H.ok(not text:find('not trusted', 1, true), 'no trust warning:\n' .. text)
      H.ok(not text:find('ERROR', 1, true), 'no errors:\n' .. text)
    end,
  },
  {
    name = 'lsp: served false when no other language server covers the file',
    run = function(H)
      H.workspace()
      H.setup()
      vim.cmd('edit main.go')
      local qwen = H.wait_client()
      H.ok(vim.lsp.buf_is_attached(0, qwen.id), 'qwen-ls attached (and never asked)')
      local res = L.call(H, 'textDocument/definition', { textDocument = { uri = uri(H, 'main.go') }, position = { line = 9, character = 18 } })
      H.eq(false, res.served, 'not served')
      H.contains(res.reason, 'no language server of Neovim is attached to main.go', 'why')
      res = L.call(H, 'qwen/diagnostics', { uri = uri(H, 'README.md'), version = 3, timeoutMs = 1000 })
      H.eq(false, res.served, 'diagnostics not served')
      res = L.call(H, 'workspace/symbol', { query = 'Add' })
      H.eq(false, res.served, 'workspace/symbol not served')
      res = L.call(H, 'textDocument/hover', { textDocument = { uri = uri(H, 'nope.go') }, position = { line = 0, character = 0 } })
      H.eq(false, res.served, 'a missing file')
      H.contains(res.reason, 'no such file', 'why')
      H.eq(-1, vim.fn.bufnr(H.ws .. '/nope.go'), 'no buffer made for it')
    end,
  },
}

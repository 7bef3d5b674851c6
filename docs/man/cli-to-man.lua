-- cli-to-man.lua: a pandoc Lua filter that makes dynalock(1) out of docs/cli.md, so
-- that the manual page and the page of the docs are one text and cannot drift.
-- Run by cli/CMakeLists.txt (pandoc -s -t man -L cli-to-man.lua -M docdir=DIR ...).
--
-- What it changes: the page's title (its one level-1 heading) goes, and NAME,
-- SYNOPSIS (the usage lines that open each subcommand's section) and DESCRIPTION
-- (the text before the first section) come first; every section moves one level up,
-- the top ones in capitals as man pages have them; a table becomes tagged paragraphs;
-- a link to another page of the
-- docs names the installed file (DOCDIR/client.md), a link inside the page names
-- the section it points at.

local NAME = "dynalock - locks, leader election and fenced writes through DynamoDB"

local docdir = "/usr/share/doc/dynalock"
local title_id = nil
local sections = {} -- header identifier -> the section's title as the man page shows it

local function upper_inlines(inlines)
  return pandoc.walk_inline(pandoc.Span(inlines), {
    Str = function(s) return pandoc.Str(s.text:upper()) end,
    Code = function(c) return pandoc.Str(c.text:upper()) end,
  }).content
end

local function read_meta(meta)
  if meta.docdir then
    docdir = pandoc.utils.stringify(meta.docdir)
  end
end

-- Sections: one level up; the top ones in capitals.
local function header(h)
  if h.level == 1 then
    title_id = h.identifier -- the page's title, removed by the last pass
    return h
  end
  h.level = h.level - 1
  if h.level == 1 then
    h.content = upper_inlines(h.content)
  end
  sections[h.identifier] = pandoc.utils.stringify(h.content)
  return h
end

local function link(l)
  local target = l.target
  if target:match("^#") then
    local title = sections[target:sub(2)]
    if not title then
      error("cli-to-man: the link " .. target .. " names no section of the page")
    end
    local out = l.content
    if pandoc.utils.stringify(l.content):upper() ~= title:upper() then
      out:insert(pandoc.Str(" (see " .. title .. ")"))
    end
    return out
  end
  local file = target:match("^([%w._-]+%.md)")
  if file then
    local text = pandoc.utils.stringify(l.content)
    if text == file or text == target then
      return { pandoc.Emph({ pandoc.Str(docdir .. "/" .. file) }) }
    end
    local out = l.content
    out:insert(pandoc.Str(" (" .. docdir .. "/" .. file .. ")"))
    return out
  end
  return nil -- a web address: pandoc's own rendering
end

-- Tables: a man page's tables (tbl) cannot wrap a long cell well, and a cell longer
-- than a page is an error; so each row becomes a tagged paragraph, its first cell the
-- tag. With two columns the second is the text; with more, each further cell is a
-- line that opens with its column's heading.
local function table_to_list(t)
  local headers = {}
  if t.head and #t.head.rows > 0 then
    for j, cell in ipairs(t.head.rows[1].cells) do
      headers[j] = pandoc.utils.stringify(cell.contents)
    end
  end
  local items = {}
  for _, body in ipairs(t.bodies) do
    for _, row in ipairs(body.body) do
      local cells = row.cells
      local term = pandoc.utils.blocks_to_inlines(cells[1].contents)
      local text = pandoc.List()
      if #cells == 2 then
        text:extend(cells[2].contents)
      else
        local lines = pandoc.List()
        for j = 2, #cells do
          if pandoc.utils.stringify(cells[j].contents) ~= "" then
            if #lines > 0 then
              lines:insert(pandoc.RawInline("man", "\n.br\n"))
            end
            lines:insert(pandoc.Emph({ pandoc.Str((headers[j] or "") .. ":") }))
            lines:insert(pandoc.Space())
            lines:extend(pandoc.utils.blocks_to_inlines(cells[j].contents))
          end
        end
        if #lines > 0 then
          text:insert(pandoc.Para(lines))
        end
      end
      if #text == 0 then
        text:insert(pandoc.Plain({}))
      end
      items[#items + 1] = { term, { text } }
    end
  end
  return pandoc.DefinitionList(items)
end

-- NAME, SYNOPSIS and DESCRIPTION first; the title goes.
local function page(doc)
  local synopsis = {}
  local intro, out = pandoc.List(), pandoc.List()
  local previous = nil
  for _, b in ipairs(doc.blocks) do
    if b.t == "Header" and b.identifier == title_id then
      -- the page's title: the man page has its own
    elseif #out == 0 and b.t ~= "Header" then
      intro:insert(b)
    else
      out:insert(b)
    end
    -- A subcommand's usage: the plain code block right after its section's heading.
    if b.t == "CodeBlock" and previous and previous.t == "Header" and #b.classes == 0 then
      for line in b.text:gmatch("[^\n]+") do
        local cmd, rest = line:match("^(dynalock [%w-]+)(.*)$")
        if cmd then
          synopsis[#synopsis + 1] = { pandoc.Strong({ pandoc.Str(cmd) }), pandoc.Str(rest) }
        end
      end
    end
    previous = b
  end
  if #synopsis == 0 then
    error("cli-to-man: no usage lines found after the sections' headings")
  end
  local blocks = pandoc.List()
  blocks:insert(pandoc.Header(1, { pandoc.Str("NAME") }))
  blocks:insert(pandoc.Para({ pandoc.Str(NAME) }))
  blocks:insert(pandoc.Header(1, { pandoc.Str("SYNOPSIS") }))
  blocks:insert(pandoc.LineBlock(synopsis))
  blocks:insert(pandoc.Header(1, { pandoc.Str("DESCRIPTION") }))
  blocks:extend(intro)
  blocks:extend(out)
  return pandoc.Pandoc(blocks, doc.meta)
end

return {
  { Meta = read_meta },
  { Header = header },
  { Link = link, Table = table_to_list },
  { Pandoc = page },
}

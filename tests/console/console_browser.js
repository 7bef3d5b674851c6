// console_browser.js: fakedb's console in a real browser (the system's Chromium, headless,
// driven by puppeteer-core). Run by console_browser.sh, which starts `fakedb --clock fake`
// and creates a lock table and a crashed holder with the `dynalock` command. This adds a
// table with a stream and an item whose key and value are HTML, then checks the views
// through the page as a person would use it, and keeps screenshots in OUT_DIR.
// Usage: node console_browser.js ENDPOINT DYNALOCK OUT_DIR   (exit 77: cannot run)
// Environment: DYNALOCK_PEERS (.peers), CHROMIUM, CHROMIUM_PROFILE (an empty directory).
'use strict';

const path = require('path');
const fs = require('fs');

const [endpoint, dynalock, outDir] = process.argv.slice(2);
const peers = process.env.DYNALOCK_PEERS;
let puppeteer, ddb;
try {
  puppeteer = require(path.join(peers, 'node_modules', 'puppeteer-core'));
  ddb = require(path.join(peers, 'node_modules', '@aws-sdk', 'client-dynamodb'));
} catch (e) {
  console.log('SKIP: puppeteer-core or the AWS SDK is not in ' + peers + ' (scripts/peers.sh): ' + e.message);
  process.exit(77);
}

// no double quotes, so that the JSON shown holds them as they are
const XSS_KEY = '<img src=x onerror=window.__xss=1>';
const XSS_VALUE = '<img src=x onerror=window.__xss=2><script>window.__xss=3</script>';

function check(cond, what) {
  if (!cond) throw new Error('FAILED: ' + what);
  console.log('ok - ' + what);
}

async function text(page, selector) {
  return page.$eval(selector, (e) => e.textContent);
}

async function waitText(page, selector, needle, what) {
  try {
    await page.waitForFunction((s, n) => {
      const e = document.querySelector(s);
      return e && e.textContent.includes(n);
    }, { timeout: 20000 }, selector, needle);
  } catch (e) {
    throw new Error('FAILED: ' + what + ': "' + needle + '" never appeared in ' + selector + ' (it holds: ' +
      (await text(page, selector).catch(() => '?')) + ')');
  }
  console.log('ok - ' + what);
}

async function shot(page, name) {
  await page.screenshot({ path: path.join(outDir, name + '.png') });
}

async function main() {
  const client = new ddb.DynamoDBClient({
    endpoint, region: 'us-east-1', maxAttempts: 1,
    credentials: { accessKeyId: 'console', secretAccessKey: 'console' },
  });
  await client.send(new ddb.CreateTableCommand({
    TableName: 'Shop', BillingMode: 'PAY_PER_REQUEST',
    AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }, { AttributeName: 'sk', AttributeType: 'S' }],
    KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }, { AttributeName: 'sk', KeyType: 'RANGE' }],
    StreamSpecification: { StreamEnabled: true, StreamViewType: 'NEW_AND_OLD_IMAGES' },
  }));
  await client.send(new ddb.PutItemCommand({ TableName: 'Shop', Item: { pk: { S: XSS_KEY }, sk: { S: 'a' }, v: { S: XSS_VALUE }, n: { N: '1' } } }));
  await client.send(new ddb.UpdateItemCommand({
    TableName: 'Shop', Key: { pk: { S: XSS_KEY }, sk: { S: 'a' } },
    UpdateExpression: 'SET n = :n', ExpressionAttributeValues: { ':n': { N: '2' } },
  }));
  await client.send(new ddb.PutItemCommand({ TableName: 'Shop', Item: { pk: { S: 'order#1' }, sk: { S: 'a' }, total: { N: '12.50' } } }));

  const browser = await puppeteer.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    userDataDir: process.env.CHROMIUM_PROFILE || path.join(outDir, 'profile'), // fresh: made by the caller
    args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
  });
  try {
    const page = await browser.newPage();
    await page.setViewport({ width: 1280, height: 800 });
    const consoleErrors = [];
    page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(m.text()); });
    page.on('pageerror', (e) => consoleErrors.push(String(e)));
    const resp = await page.goto(endpoint + '/fake/console', { waitUntil: 'load' });
    check(resp.status() === 200, 'the console answers 200');
    const h = resp.headers();
    check((h['content-type'] || '').startsWith('text/html'), 'the page is text/html');
    check((h['content-security-policy'] || '').includes("default-src 'self'"), 'the page carries its Content-Security-Policy');
    check(h['x-content-type-options'] === 'nosniff', 'the page carries X-Content-Type-Options: nosniff');

    // Tables
    await waitText(page, '#tables-list tbody', 'Shop', 'the tables view lists Shop');
    const tables = await text(page, '#tables-list tbody');
    check(tables.includes('Locks') && tables.includes('pk (partition, S)') && tables.includes('sk (sort, S)'),
      'the tables view shows both tables and their key schema');
    check(tables.includes('on, NEW_AND_OLD_IMAGES'), 'the tables view shows the stream setting');
    await page.click('#tables-list tbody button[aria-label="Show the items of Shop"]');
    await waitText(page, '#items-list', XSS_VALUE, 'an item value of HTML is shown as its text');
    const items = await text(page, '#items-list');
    check(items.includes('"S": "order#1"') && items.includes('"N": "12.5"'), 'items are shown as DynamoDB JSON');
    await page.select('#items-format', 'plain');
    await waitText(page, '#items-list', '"total": 12.5', 'items are shown as plain JSON');
    await page.type('#items-prefix', 'order');
    await page.click('#items-form button[type=submit]');
    await page.waitForFunction(() => !document.querySelector('#items-list').textContent.includes('window.__xss'));
    check((await text(page, '#items-list')).includes('order#1'), 'the key prefix filter keeps order#1 and leaves out the others');
    await page.$eval('#items-prefix', (e) => { e.value = ''; });
    await page.select('#items-format', 'ddb'); // a change of format reloads the page of items
    await waitText(page, '#items-list', XSS_KEY, 'the HTML key is back');
    await page.click('#items-list button[aria-label^="History of <img"]');
    await waitText(page, '#history-list', 'MODIFY', 'the item history from the stream shows its update');
    const hist = await text(page, '#history-list');
    check(hist.indexOf('INSERT') >= 0 && hist.indexOf('INSERT') < hist.indexOf('MODIFY'), 'the history holds the insert, then the update');
    const imgs = await page.$$eval('img', (l) => l.length);
    const scripts = await page.$$eval('script', (l) => l.length);
    const xss = await page.evaluate(() => window.__xss);
    check(imgs === 0, 'no img element was created from the data');
    check(scripts === 1, 'no script element was created from the data');
    check(xss === undefined, 'no handler from the data ran');
    await shot(page, 'console-tables-1280x800');

    // Locks
    await page.click('nav button[data-view=locks]');
    await waitText(page, '#locks-list tbody', 'nightly', 'the locks view lists the lock nightly');
    const locks = await text(page, '#locks-list tbody');
    check(locks.includes('<img src=x onerror=alert(1)>'), 'the holder label of HTML is shown as its text');
    check(locks.includes('held') && !locks.includes('PAST DUE'), 'the lock is held, not past due');
    check(locks.includes('30 s'), 'the lease is shown');
    check((await page.$$eval('img', (l) => l.length)) === 0, 'the label made no img element');
    await shot(page, 'console-locks-held');

    // Clock: keyboard to the tab, the button that advances one lease
    await page.focus('nav button[data-view=clock]');
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => !document.getElementById('view-clock').hidden);
    check(true, 'the clock view opens from the keyboard');
    const before = Number(await text(page, '#clock-ms'));
    check((await text(page, '#clock-mode')).startsWith('fake'), 'the clock view says the clock is fake');
    await page.waitForFunction(() => /Advance one lease \(30 s\)/.test(document.getElementById('advance-lease').textContent) &&
      !document.getElementById('advance-lease').disabled);
    await page.click('#advance-1s');
    await page.waitForFunction((b) => Number(document.getElementById('clock-ms').textContent) === b + 1000, { timeout: 20000 }, before);
    check(true, 'advance 1 s moves the clock by 1000 ms');
    await page.click('#advance-lease');
    await page.waitForFunction((b) => Number(document.getElementById('clock-ms').textContent) === b + 31000, { timeout: 20000 }, before);
    check(true, 'advance one lease moves the clock by the lease');
    await shot(page, 'console-clock');
    await page.click('nav button[data-view=locks]');
    await waitText(page, '#locks-list tbody', 'PAST DUE', 'the lease is past due after the clock passed it');
    check(await page.$eval('#locks-list tbody tr', (tr) => tr.classList.contains('past-due')), 'the past-due row stands out');
    await shot(page, 'console-locks-past-due');
    // the top of the view only: the picture in docs/fakedb.md
    await page.screenshot({ path: path.join(outDir, 'console-locks-past-due-top.png'), clip: { x: 0, y: 0, width: 1280, height: 330 } });

    // Faults
    await page.click('nav button[data-view=faults]');
    await page.select('#fault-kind', 'error');
    await page.type('#fault-operation', 'GetItem');
    await page.type('#fault-table', 'Shop');
    await page.$eval('#fault-count', (e) => { e.value = '2'; });
    await page.click('#fault-form button[type=submit]');
    await waitText(page, '#faults-list tbody', 'ProvisionedThroughputExceededException', 'the fault added is listed');
    let faultRow = await text(page, '#faults-list tbody tr');
    check(/GetItem.*Shop/.test(faultRow), 'the fault names its operation and table');
    let threw = null;
    try {
      await client.send(new ddb.GetItemCommand({ TableName: 'Shop', Key: { pk: { S: 'order#1' }, sk: { S: 'a' } } }));
    } catch (e) { threw = e; }
    check(threw && threw.name === 'ProvisionedThroughputExceededException', 'the fault fires on the next GetItem of Shop');
    await page.waitForFunction(() => {
      const td = document.querySelectorAll('#faults-list tbody tr td');
      return td.length > 5 && td[5].textContent === '1';
    }, { timeout: 20000 });
    check(true, 'the faults view shows it fired once');
    await waitText(page, '#faults-total', 'since start: 1', 'the faults view counts the faults fired');
    await shot(page, 'console-faults');
    await page.click('#faults-list tbody button[aria-label^="Remove fault"]');
    await waitText(page, '#faults-list tbody', 'no faults', 'the remove button removes it');

    // Requests
    await page.click('nav button[data-view=requests]');
    await waitText(page, '#requests-list tbody', 'ProvisionedThroughputExceededException', 'the requests view shows the failed GetItem');
    const reqs = await text(page, '#requests-list tbody');
    check(reqs.includes('GetItem') && reqs.includes('Shop') && reqs.includes('400'), 'with its operation, table and status');
    check(reqs.includes('PutItem') && reqs.includes('UpdateItem'), 'and the writes before it');
    for (let i = 0; i < 5; i++)
      await client.send(new ddb.GetItemCommand({ TableName: 'Shop', Key: { pk: { S: 'order#1' }, sk: { S: 'a' } } }));
    await page.waitForFunction(() => {
      for (const tr of document.querySelectorAll('#rates-list tbody tr'))
        if (tr.cells[0].textContent === 'GetItem' && Number(tr.cells[2].textContent) >= 6) return true;
      return false;
    }, { timeout: 20000 });
    check(true, 'the rates by operation count the GetItem requests');
    await shot(page, 'console-requests-1280x800');

    // narrow
    await page.setViewport({ width: 400, height: 800 });
    await page.click('nav button[data-view=locks]');
    await waitText(page, '#locks-list tbody', 'PAST DUE', 'the locks view on a narrow window');
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    check(overflow <= 0, 'the narrow page does not scroll sideways (tables scroll in their own box)');
    await shot(page, 'console-locks-400');
    await page.click('nav button[data-view=faults]');
    await shot(page, 'console-faults-400');

    check(consoleErrors.length === 0, 'no errors in the browser console (CSP violations included): ' + consoleErrors.join(' | '));
  } finally {
    await browser.close();
  }
}

main().then(() => process.exit(0), (e) => { console.error(e && e.stack ? e.stack : e); process.exit(1); });
